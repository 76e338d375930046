package source_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/pkg/failure"
)

// TestDeadline points sources at real servers that stall — they accept the
// connection and never answer, or answer a byte at a time — and checks that
// each call gives up at the deadline with a ResourceLimit failure naming
// the source and the deadline. (Git sources are tried the same way, over
// HTTP and SSH, in package git.)
func TestDeadline(t *testing.T) {
	const deadline = time.Second
	silent := silentServer(t)
	trickle := httptest.NewServer(trickler(http.NotFoundHandler(), func(*http.Request) bool { return true }))
	t.Cleanup(trickle.Close)
	// A registry whose manifests come at once and whose blobs trickle.
	var pushed atomic.Bool
	reg := httptest.NewServer(trickler(registry.New(registry.Logger(log.New(io.Discard, "", 0))), func(r *http.Request) bool {
		return pushed.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/")
	}))
	t.Cleanup(reg.Close)
	imgRef := strings.TrimPrefix(reg.URL, "http://") + "/bundle:v1"
	digest := pushImage(t, imgRef)
	pushed.Store(true)

	creds := credentials.NewReader(nil, v1alpha2.SystemNamespace) // no Secret is named
	sources := source.Registry{
		v1alpha2.SourceTypeHTTP:  httpsource.New(creds),
		v1alpha2.SourceTypeImage: image.New(creds),
	}.WithDeadline(deadline)

	httpSrc := func(url, sha string) v1alpha2.BundleSource {
		return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: url, SHA256: sha}}
	}
	imageSrc := func(ref, digest string) v1alpha2.BundleSource {
		return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: ref, Digest: digest}}
	}
	sha := strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		src    v1alpha2.BundleSource
		unpack bool // Unpack the source as it is; else Resolve it
		want   string
	}{
		{name: "http server that never answers, resolve", src: httpSrc("http://"+silent+"/b.tgz", ""),
			want: "resolving http source http://" + silent + "/b.tgz took longer than the deadline of 1s"},
		{name: "http server that never answers, unpack", src: httpSrc("http://"+silent+"/b.tgz", sha), unpack: true,
			want: "fetching http source http://" + silent + "/b.tgz took longer than the deadline of 1s"},
		{name: "http server that trickles, unpack", src: httpSrc(trickle.URL+"/b.tgz", sha), unpack: true,
			want: "fetching http source " + trickle.URL + "/b.tgz took longer than the deadline of 1s"},
		{name: "registry that never answers, resolve", src: imageSrc(silent+"/bundle:v1", ""),
			want: "resolving image " + silent + "/bundle:v1 took longer than the deadline of 1s"},
		{name: "registry that trickles blobs, unpack", src: imageSrc(imgRef, digest), unpack: true,
			want: "fetching image " + imgRef + " took longer than the deadline of 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			var err error
			if tt.unpack {
				err = sources.Unpack(context.Background(), []v1alpha2.BundleSource{tt.src}, t.TempDir())
			} else {
				_, err = sources.Resolve(context.Background(), []v1alpha2.BundleSource{tt.src}, nil, false)
			}
			elapsed := time.Since(start)
			f := failure.As(err)
			if f == nil || f.Reason != v1alpha2.ReasonResourceLimit || !strings.Contains(f.Message, tt.want) {
				t.Fatalf("error = %v, want a %s failure containing %q", err, v1alpha2.ReasonResourceLimit, tt.want)
			}
			if elapsed > deadline+5*time.Second {
				t.Errorf("gave up after %s, want about %s", elapsed, deadline)
			}
		})
	}
}

// TestDeadlineLeavesOtherErrors checks that the caller's own cancellation is
// not reported as the source's deadline.
func TestDeadlineLeavesOtherErrors(t *testing.T) {
	silent := silentServer(t)
	sources := source.Registry{
		v1alpha2.SourceTypeHTTP: httpsource.New(credentials.NewReader(nil, v1alpha2.SystemNamespace)),
	}.WithDeadline(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "http://" + silent + "/b.tgz"}}
	_, err := sources.Resolve(ctx, []v1alpha2.BundleSource{src}, nil, false)
	if err == nil || failure.As(err) != nil {
		t.Fatalf("error = %v, want the transient error of the cancelled context", err)
	}
}

// gzipped is a valid gzip stream (of 1 MiB of zeros), which tricklers send
// a byte at a time.
var gzipped = func() []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	return b.Bytes()
}()

// trickler serves what h serves, except that requests match selects are
// answered with 200 and one byte of gzipped every 100ms until the client
// goes away.
func trickler(h http.Handler, match func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !match(r) {
			h.ServeHTTP(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
		for i := 0; ; i++ {
			if _, err := w.Write(gzipped[i%len(gzipped) : i%len(gzipped)+1]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// pushImage pushes a random image to ref and returns its digest.
func pushImage(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// silentServer listens on loopback, accepts connections and never writes
// to them; it returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				<-done
				_ = c.Close()
			}()
		}
	}()
	return l.Addr().String()
}
