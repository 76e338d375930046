package resolvecache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
)

// contents is a fake Contents: Secrets and ConfigMaps by name.
type contents struct {
	mu      sync.Mutex
	secrets map[string]map[string][]byte
}

func (c *contents) set(name string, data map[string][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets[name] = data
}

func (c *contents) Secret(_ context.Context, ref *v1alpha2.LocalObjectReference) (*corev1.Secret, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.secrets[ref.Name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, ref.Name)
	}
	return &corev1.Secret{Data: d}, nil
}

func (c *contents) ConfigMap(_ context.Context, ref *v1alpha2.LocalObjectReference) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, ref.Name)
}

// lookups is a fake floating image source: every lookup is counted and
// pins the tag to a digest naming the lookup; one whose release channel
// is set waits for it.
type lookups struct {
	n       atomic.Int32
	release chan struct{}
	err     error
}

func (l *lookups) Floating(src v1alpha2.BundleSource) bool { return src.Image.Digest == "" }

func (l *lookups) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	if !l.Floating(src) {
		return src, nil
	}
	n := l.n.Add(1)
	if l.release != nil {
		select {
		case <-l.release:
		case <-ctx.Done():
			return v1alpha2.BundleSource{}, ctx.Err()
		}
	}
	if l.err != nil {
		return v1alpha2.BundleSource{}, l.err
	}
	out := *src.DeepCopy()
	out.Image.Digest = fmt.Sprintf("sha256:lookup-%d", n)
	return out, nil
}

func (l *lookups) Unpack(context.Context, v1alpha2.BundleSource, string) error { return nil }

func img(ref, secret string) v1alpha2.BundleSource {
	s := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: ref}}
	if secret != "" {
		s.Image.PullSecret = &v1alpha2.LocalObjectReference{Name: secret}
	}
	return s
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestSharedResolutions(t *testing.T) {
	type call struct {
		src     v1alpha2.BundleSource
		advance time.Duration // before the call
		setA    []byte        // the Secret team-a's password becomes this, before the call
		digest  string        // the pin it must get ("" with err)
		err     string
	}
	cases := []struct {
		name    string
		lookup  error
		calls   []call
		lookups int32
	}{
		{name: "one source asked again within the interval is looked up once", calls: []call{
			{src: img("r/app:v1", ""), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", ""), advance: 9 * time.Second, digest: "sha256:lookup-1"},
		}, lookups: 1},
		{name: "once the interval passed it is looked up again", calls: []call{
			{src: img("r/app:v1", ""), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", ""), advance: MaxAge, digest: "sha256:lookup-2"},
		}, lookups: 2},
		{name: "other sources are looked up each", calls: []call{
			{src: img("r/app:v1", ""), digest: "sha256:lookup-1"},
			{src: img("r/app:v2", ""), digest: "sha256:lookup-2"},
			{src: img("r/other:v1", ""), digest: "sha256:lookup-3"},
		}, lookups: 3},
		{name: "with credentials and without are looked up each", calls: []call{
			{src: img("r/app:v1", "team-a"), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", ""), digest: "sha256:lookup-2"},
			{src: img("r/app:v1", "team-a"), digest: "sha256:lookup-1"},
		}, lookups: 2},
		{name: "two Secrets with other contents do not share", calls: []call{
			{src: img("r/app:v1", "team-a"), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", "team-b"), digest: "sha256:lookup-2"},
		}, lookups: 2},
		{name: "two Secrets of other names are looked up each, even with the same contents", calls: []call{
			{src: img("r/app:v1", "team-b"), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", "team-b-copy"), digest: "sha256:lookup-2"},
		}, lookups: 2},
		{name: "a Secret whose contents changed is looked up again", calls: []call{
			{src: img("r/app:v1", "team-a"), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", "team-a"), setA: []byte("rotated"), digest: "sha256:lookup-2"},
		}, lookups: 2},
		{name: "a missing Secret is the source's to report, not kept", calls: []call{
			{src: img("r/app:v1", "nobody"), digest: "sha256:lookup-1"},
			{src: img("r/app:v1", "nobody"), digest: "sha256:lookup-2"},
		}, lookups: 2},
		{name: "a pinned source is not looked up", calls: []call{
			{src: func() v1alpha2.BundleSource { s := img("r/app:v1", ""); s.Image.Digest = "sha256:pinned"; return s }(), digest: "sha256:pinned"},
		}, lookups: 0},
		{name: "a failure is shared within the interval", lookup: errors.New("registry down"), calls: []call{
			{src: img("r/app:v1", ""), err: "registry down"},
			{src: img("r/app:v1", ""), err: "registry down"},
			{src: img("r/app:v1", ""), advance: MaxAge, err: "registry down"},
		}, lookups: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds := &contents{secrets: map[string]map[string][]byte{
				"team-a":      {"password": []byte("a")},
				"team-b":      {"password": []byte("b")},
				"team-b-copy": {"password": []byte("b")},
			}}
			clk := &clock{t: time.Unix(1e9, 0)}
			inner := &lookups{err: tc.lookup}
			reg := New(creds, WithClock(clk.now)).Wrap(source.Registry{v1alpha2.SourceTypeImage: inner})
			for i, c := range tc.calls {
				clk.add(c.advance)
				if c.setA != nil {
					creds.set("team-a", map[string][]byte{"password": c.setA})
				}
				got, err := reg.Resolve(t.Context(), []v1alpha2.BundleSource{c.src}, nil, false)
				if c.err != "" {
					if err == nil || !strings.Contains(err.Error(), c.err) {
						t.Fatalf("call %d: error %v, want one saying %q", i, err, c.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if got[0].Image.Digest != c.digest {
					t.Errorf("call %d: pinned to %s, want %s", i, got[0].Image.Digest, c.digest)
				}
			}
			if n := inner.n.Load(); n != tc.lookups {
				t.Errorf("%d lookups, want %d", n, tc.lookups)
			}
		})
	}
}

// TestConcurrentCallersShareOneLookup: callers that ask while a lookup is
// under way wait for it.
func TestConcurrentCallersShareOneLookup(t *testing.T) {
	inner := &lookups{release: make(chan struct{})}
	var outcomes sync.Map
	c := New(&contents{}, WithObserver(func(_ v1alpha2.SourceType, o Outcome) {
		n, _ := outcomes.LoadOrStore(o, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}))
	reg := c.Wrap(source.Registry{v1alpha2.SourceTypeImage: inner})
	const callers = 100
	digests := make(chan string, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := reg.Resolve(t.Context(), []v1alpha2.BundleSource{img("r/app:v1", "")}, nil, false)
			if err != nil {
				t.Error(err)
				return
			}
			digests <- got[0].Image.Digest
		}()
	}
	waitFor(t, func() bool { return inner.n.Load() == 1 })
	close(inner.release)
	wg.Wait()
	close(digests)
	for d := range digests {
		if d != "sha256:lookup-1" {
			t.Errorf("a caller got %s, want the one lookup's sha256:lookup-1", d)
		}
	}
	if n := inner.n.Load(); n != 1 {
		t.Errorf("%d lookups for %d concurrent callers, want 1", n, callers)
	}
	looked, _ := outcomes.Load(LookedUp)
	shared, _ := outcomes.Load(Shared)
	if looked.(*atomic.Int32).Load() != 1 || shared.(*atomic.Int32).Load() != callers-1 {
		t.Errorf("observed %d looked up and %d shared, want 1 and %d", looked.(*atomic.Int32).Load(), shared.(*atomic.Int32).Load(), callers-1)
	}
}

// TestAbandonedLookupIsNotShared: a lookup whose caller gave up (its
// reconcile cancelled) is not what the callers waiting for it get; one
// of them looks the source up again.
func TestAbandonedLookupIsNotShared(t *testing.T) {
	inner := &lookups{release: make(chan struct{})}
	c := New(&contents{})
	waiting := make(chan struct{}, 1)
	c.onWait = func() { waiting <- struct{}{} }
	reg := c.Wrap(source.Registry{v1alpha2.SourceTypeImage: inner})
	leaderCtx, cancel := context.WithCancel(t.Context())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := reg.Resolve(leaderCtx, []v1alpha2.BundleSource{img("r/app:v1", "")}, nil, false)
		leaderErr <- err
	}()
	waitFor(t, func() bool { return inner.n.Load() == 1 })
	waiter := make(chan string, 1)
	go func() {
		got, err := reg.Resolve(t.Context(), []v1alpha2.BundleSource{img("r/app:v1", "")}, nil, false)
		if err != nil {
			t.Error(err)
		}
		waiter <- got[0].Image.Digest
	}()
	<-waiting // the waiter waits for the leader's lookup
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want its context's cancellation", err)
	}
	waitFor(t, func() bool { return inner.n.Load() == 2 })
	close(inner.release)
	if d := <-waiter; d != "sha256:lookup-2" {
		t.Errorf("waiter got %s, want its own lookup's sha256:lookup-2", d)
	}
}

// TestSweepBoundsEntries: entries that no longer answer are dropped, so
// the cache holds what was asked in the last interval or two.
func TestSweepBoundsEntries(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	c := New(&contents{}, WithClock(clk.now))
	reg := c.Wrap(source.Registry{v1alpha2.SourceTypeImage: &lookups{}})
	for i := range 50 {
		if _, err := reg.Resolve(t.Context(), []v1alpha2.BundleSource{img(fmt.Sprintf("r/app%d:v1", i), "")}, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 50 {
		t.Fatalf("%d entries, want 50", c.Len())
	}
	clk.add(2 * MaxAge)
	if _, err := reg.Resolve(t.Context(), []v1alpha2.BundleSource{img("r/new:v1", "")}, nil, false); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 1 {
		t.Errorf("%d entries after two intervals, want only the new one", c.Len())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// versions is a fake source that is Versioned, a Reporter and a
// Successor, to see that the wrapper keeps what each says.
type versions struct{ lookups }

func (*versions) SelectedVersion(p v1alpha2.BundleSource) string { return "selected-" + p.Image.Ref }
func (*versions) PinnedVersion(p v1alpha2.BundleSource) string   { return "pinned-" + p.Image.Ref }
func (*versions) ResolveFrom(_ context.Context, src v1alpha2.BundleSource, installed *v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	out := *src.DeepCopy()
	out.Image.Digest = "from-" + installed.Image.Digest
	return out, nil
}

// TestWrapperKeepsWhatTheSourceSays: the wrapped registry reports the
// versions the sources report, and a Successor resolves from what is
// installed, not from the cache.
func TestWrapperKeepsWhatTheSourceSays(t *testing.T) {
	reg := New(&contents{}).Wrap(source.Registry{
		v1alpha2.SourceTypeImage:   &versions{},
		v1alpha2.SourceTypeCatalog: &lookups{},
	})
	src := img("r/app", "")
	s := reg[v1alpha2.SourceTypeImage]
	if got := s.(source.Versioned).SelectedVersion(src); got != "selected-r/app" {
		t.Errorf("SelectedVersion %q", got)
	}
	if got := s.(source.Reporter).PinnedVersion(src); got != "pinned-r/app" {
		t.Errorf("PinnedVersion %q", got)
	}
	if got := reg[v1alpha2.SourceTypeCatalog].(source.Reporter).PinnedVersion(src); got != "" {
		t.Errorf("PinnedVersion of a source that reports none: %q", got)
	}
	installed := img("r/app", "")
	installed.Image.Digest = "sha256:installed"
	res, err := reg.ResolveFrom(t.Context(), []v1alpha2.BundleSource{src}, nil, false, []v1alpha2.BundleSource{installed})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Pinned[0].Image.Digest; got != "from-sha256:installed" {
		t.Errorf("resolved from the installed source to %q, want from-sha256:installed", got)
	}
}
