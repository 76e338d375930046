package sandboxed

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/plain"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/internal/tenant"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// testLimits are small, so that attacks end fast. The time limit counts
// CPU time: every bomb of TestLimits reaches 256 MiB within 1.5 s of it, so
// each runs into the limit it aims at however busy the machine is; the
// wall-clock deadline is long, so that a loop is always stopped for its
// CPU time.
var testLimits = sandbox.Limits{Memory: 256 << 20, Timeout: 3 * time.Second, WallTimeout: 10 * time.Minute}

func newRunner(t *testing.T, l sandbox.Limits) *sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newFormat(t *testing.T, name string, r *sandbox.Runner) *Format {
	t.Helper()
	f, err := New(name, r)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// testdata returns the bundles of a sibling format package's testdata.
func testdata(t *testing.T, pkg, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", pkg, "testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join("..", pkg, "testdata", dir, e.Name()))
		}
	}
	return out
}

// Every fixture of the formats renders to the same objects, or fails with
// the same error, in a child as in this process.
func TestSameAsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("a child for each of 35 fixture renders: make test runs it, make test-unit does not")
	}
	r := newRunner(t, sandbox.Limits{})
	cases := []struct {
		format string
		dirs   []string
		cfg    format.Config
	}{
		{Helm, testdata(t, "helm", "charts"), format.Config{ReleaseName: "rel", InstallNamespace: "ns",
			Values: map[string]any{"replicaCount": float64(3), "nested": map[string]any{"a": "b"}}}},
		{Helm, testdata(t, "helm", "charts"), format.Config{ReleaseName: "rel", InstallNamespace: "ns",
			Capabilities: &format.Capabilities{KubeVersion: "v1.31.2", APIVersions: []string{"v1", "policy/v1", "policy/v1/PodDisruptionBudget"}}}},
		{Plain, testdata(t, "plain", "bundles"), format.Config{ReleaseName: "rel", InstallNamespace: "ns"}},
		{RegistryV1, testdata(t, "registryv1", "bundles"), format.Config{ReleaseName: "rel", InstallNamespace: "ns"}},
		{RegistryV1, testdata(t, "registryv1", "bundles"), format.Config{ReleaseName: "rel", InstallNamespace: "ns",
			Bundle: &v1alpha2.BundleConfig{WatchNamespaces: []string{"ns"}}}},
	}
	local := map[string]*Format{}
	child := map[string]*Format{}
	for _, name := range []string{Helm, Plain, RegistryV1} {
		local[name], child[name] = newFormat(t, name, nil), newFormat(t, name, r)
	}
	compared := 0
	for _, c := range cases {
		for _, dir := range c.dirs {
			t.Run(c.format+"/"+filepath.Base(dir), func(t *testing.T) {
				want, wantErr := local[c.format].Objects(context.Background(), os.DirFS(dir), c.cfg)
				got, err := child[c.format].Objects(context.Background(), os.DirFS(dir), c.cfg)
				if wantErr != nil || err != nil {
					if wantErr == nil || err == nil || err.Error() != wantErr.Error() ||
						failure.Reason(err, "") != failure.Reason(wantErr, "") {
						t.Fatalf("in a child: %v (%s); in process: %v (%s)",
							err, failure.Reason(err, "-"), wantErr, failure.Reason(wantErr, "-"))
					}
					return
				}
				if len(want) == 0 {
					t.Fatal("no objects in process")
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("objects differ:\nchild:      %v\nin process: %v", got, want)
				}
				compared++
			})
		}
	}
	if compared < 15 {
		t.Fatalf("only %d fixtures rendered to objects; the comparison proves little", compared)
	}
}

// A bundle that is not a directory on disk is copied to one first.
func TestNotADirectory(t *testing.T) {
	f := newFormat(t, Plain, newRunner(t, sandbox.Limits{}))
	fsys := fstest.MapFS{"manifests/cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {n: '1'}\n")}}
	objs, err := f.Objects(context.Background(), fsys, format.Config{InstallNamespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetName() != "a" {
		t.Fatalf("objects %v", objs)
	}
}

// writeFiles writes files (path: content) under a new directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chart returns the files of a chart called name with one template.
func chart(name, template, values string) map[string]string {
	return map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"values.yaml":       values,
		"templates/cm.yaml": template,
	}
}

// copyBomb is a kustomization whose JSON patch copies a list into itself
// 40 times: 2^40 copies of a string.
func copyBomb() map[string]string {
	ops := strings.Repeat("    - {op: copy, from: /x, path: /x/-}\n", 40)
	return map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap, name: boom}\n  patch: |-\n" + ops,
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: boom}\nx: [\"0123456789abcdef0123456789abcdef\"]\n",
	}
}

// Bundles that blow up fail with ResourceLimit naming what blew up and
// the limit; the test process is untouched.
func TestLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("five children run into their limits (sandbox's TestRun has one of each): make test runs it, make test-unit does not")
	}
	r := newRunner(t, testLimits)
	tests := []struct {
		name   string
		format string
		files  map[string]string
		want   string
	}{
		{"range until 2000000000", Helm,
			chart("until-bomb", "{{ range $i := until 2000000000 }}{{ $i }}{{ end }}\n", ""),
			"rendering chart until-bomb exceeded the memory limit of 256 MiB"},
		{"tpl recursion", Helm,
			chart("tpl-bomb", "{{ tpl .Values.x . }}\n", "x: \"{{ tpl .Values.x . }}\"\n"),
			"rendering chart tpl-bomb exceeded the memory limit of 256 MiB"},
		{"string doubling", Helm,
			chart("doubling", "{{ $s := \"xxxxxxxx\" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}{{ $s }}\n", ""),
			"rendering chart doubling exceeded the memory limit of 256 MiB"},
		{"endless loop", Helm,
			chart("spinner", "{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}\n", ""),
			"rendering chart spinner did not finish within 3s of CPU time"},
		{"kustomize JSON patch copy bomb", Plain, copyBomb(),
			"building kustomization kustomization.yaml exceeded the memory limit of 256 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFormat(t, tt.format, r)
			start := time.Now()
			_, err := f.Objects(context.Background(), os.DirFS(writeFiles(t, tt.files)), format.Config{ReleaseName: "rel", InstallNamespace: "ns"})
			t.Logf("refused in %v: %v", time.Since(start).Round(time.Millisecond), err)
			if failure.Reason(err, "") != v1alpha2.ReasonResourceLimit {
				t.Fatalf("error %v, want reason ResourceLimit", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// Children that run out of memory side by side at the default limit are
// all refused for their memory. Go 1.26's runtime sometimes faults on nil
// instead of reporting "out of memory" when the system refuses it memory
// while several collectors run: such a child must not read as a crash.
func TestMemoryLimitSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of four 512 MiB children side by side: make test runs it, make test-unit does not")
	}
	f := newFormat(t, Helm, newRunner(t, sandbox.Limits{Memory: sandbox.DefaultMemory, WallTimeout: testLimits.WallTimeout}))
	dir := writeFiles(t, chart("tpl-bomb", "{{ tpl .Values.x . }}\n", "x: \"{{ tpl .Values.x . }}\"\n"))
	const workers, runs = 4, 3
	errs := make(chan error, workers*runs)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range runs {
				_, err := f.Objects(context.Background(), os.DirFS(dir), format.Config{ReleaseName: "rel", InstallNamespace: "ns"})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if failure.Reason(err, "") != v1alpha2.ReasonResourceLimit || !strings.Contains(err.Error(), "exceeded the memory limit of 512 MiB") {
			t.Errorf("error %v (%s), want ResourceLimit for the memory limit", err, failure.Reason(err, "-"))
		}
	}
}

// An ordinary template error keeps its reason and names the file.
func TestRenderErrorKeepsReason(t *testing.T) {
	f := newFormat(t, Helm, newRunner(t, testLimits))
	dir := writeFiles(t, chart("broken", "{{ .Values.x.y.z | required \"x.y.z is required\" }}\n", ""))
	_, err := f.Objects(context.Background(), os.DirFS(dir), format.Config{ReleaseName: "rel", InstallNamespace: "ns"})
	if failure.Reason(err, "") != v1alpha2.ReasonRenderFailed || !strings.Contains(err.Error(), "broken/templates/cm.yaml") {
		t.Fatalf("error %v (%s), want RenderFailed naming broken/templates/cm.yaml", err, failure.Reason(err, "-"))
	}
}

// Values from Secrets echoed by templates never reach the error, in a
// child or in this process.
func TestRedaction(t *testing.T) {
	const password = "hunter2-Sup3rSecret"
	const key = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END KEY-----"
	vals := map[string]any{"password": password, "key": key, "visible": "plain-value"}
	redact := []string{password, key}
	tests := []struct {
		name     string
		template string
		reason   string // RenderFailed when empty
	}{
		{"fail", "{{ fail .Values.password }}", ""},
		{"required's message", "{{ required .Values.password .Values.missing }}", ""},
		{"quoted", "{{ fail (printf \"%q and %s\" .Values.password .Values.visible) }}", ""},
		{"base64", "{{ fail (b64enc .Values.password) }}", ""},
		{"multi-line", "{{ fail .Values.key }}", ""},
		{"multi-line quoted", "{{ fail (printf \"%q\" .Values.key) }}", ""},
		{"as the name of a duplicate object", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Values.password }}}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Values.password }}}\n", v1alpha2.ReasonInvalidContent},
	}
	for _, runner := range []*sandbox.Runner{newRunner(t, testLimits), nil} {
		f := newFormat(t, Helm, runner)
		for _, tt := range tests {
			t.Run(tt.name+map[bool]string{true: " in a child", false: " in process"}[runner != nil], func(t *testing.T) {
				dir := writeFiles(t, chart("leaky", tt.template, ""))
				_, err := f.Objects(context.Background(), os.DirFS(dir), format.Config{
					ReleaseName: "rel", InstallNamespace: "ns", Values: vals, Redact: redact})
				if err == nil {
					t.Fatal("rendered, want an error")
				}
				msg := err.Error()
				for _, leak := range []string{"hunter2", "Sup3rSecret", "aHVudGVyMi1TdXAzclNlY3JldA", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7"} {
					if strings.Contains(msg, leak) {
						t.Fatalf("error %q holds %q", msg, leak)
					}
				}
				if !strings.Contains(msg, "[redacted]") || !strings.Contains(msg, "leaky/templates/cm.yaml") {
					t.Fatalf("error %q does not say [redacted] and name the template", msg)
				}
				want := tt.reason
				if want == "" {
					want = v1alpha2.ReasonRenderFailed
				}
				if failure.Reason(err, "") != want {
					t.Fatalf("reason %q, want %s", failure.Reason(err, ""), want)
				}
			})
		}
	}
}

// BenchmarkRender compares rendering the webapp chart in this process and
// in a child: the difference is what the sandbox adds per render.
func BenchmarkRender(b *testing.B) {
	r, err := sandbox.New(sandbox.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := format.Config{ReleaseName: "rel", InstallNamespace: "ns"}
	fsys := os.DirFS(filepath.Join("..", "helm", "testdata", "charts", "webapp"))
	for _, runner := range []*sandbox.Runner{nil, r} {
		f, err := New(Helm, runner)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[bool]string{true: "child", false: "in-process"}[runner != nil], func(b *testing.B) {
			for b.Loop() {
				if _, err := f.Objects(context.Background(), fsys, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Every render takes a slot of its tenant, whatever it renders: while a
// tenant's chart that loops holds that tenant's only slot, the tenant's
// renders of content that rendered before (drift correction, a
// BundleDeployment created again), of a large plain bundle and of a small
// plain bundle decoded in process all wait; another tenant's renders of
// the same content do not.
func TestEveryRenderTakesASlot(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a looping chart's 5s limit: make test runs it, make test-unit does not")
	}
	r := newRunner(t, sandbox.Limits{Concurrency: 2, TenantConcurrency: 1, Timeout: 5 * time.Second})
	helm, pl := newFormat(t, Helm, r), newFormat(t, Plain, r)
	cfg := format.Config{ReleaseName: "rel", InstallNamespace: "ns"}
	good := os.DirFS(writeFiles(t, chart("good", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n", "")))
	large := os.DirFS(largePlain(t, 400, -1))
	small := os.DirFS(writeFiles(t, map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\n"}))
	renders := []struct {
		name    string
		f       *Format
		fsys    fs.FS
		objects int
	}{
		{"a chart that rendered before", helm, good, 1},
		{"a large plain bundle that rendered before", pl, large, 400},
		{"a small plain bundle, in process", pl, small, 1},
	}
	teamA, teamB := tenant.WithContext(context.Background(), "team-a"), tenant.WithContext(context.Background(), "team-b")
	for _, rd := range renders {
		if objs, err := rd.f.Objects(teamA, rd.fsys, cfg); err != nil || len(objs) != rd.objects {
			t.Fatalf("first render of %s: %d objects, %v", rd.name, len(objs), err)
		}
	}
	loop := os.DirFS(writeFiles(t, chart("spinner", "{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}\n", "")))
	done := make(chan error, 1)
	go func() {
		_, err := helm.Objects(teamA, loop, cfg)
		done <- err
	}()
	eventually(t, 5*time.Second, func() error {
		if u := r.Usage(); u.Running != 1 {
			return fmt.Errorf("%d slots held, want the loop's", u.Running)
		}
		return nil
	})
	for _, rd := range renders {
		t.Run(rd.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(teamA, 300*time.Millisecond)
			defer cancel()
			if _, err := rd.f.Objects(ctx, rd.fsys, cfg); err == nil || !strings.Contains(err.Error(), "tenant team-a's 1 slots") {
				t.Fatalf("team-a: %v, want it to wait for the slot its loop holds", err)
			}
			ctx, cancel = context.WithTimeout(teamB, 3*time.Second)
			defer cancel()
			if objs, err := rd.f.Objects(ctx, rd.fsys, cfg); err != nil || len(objs) != rd.objects {
				t.Fatalf("team-b, while team-a's loop runs: %d objects, %v", len(objs), err)
			}
		})
	}
	if err := <-done; failure.Reason(err, "") != v1alpha2.ReasonResourceLimit {
		t.Fatalf("loop: %v", err)
	}
	if u := r.Usage(); u.Peak > 2 || u.PeakOf["team-a"] > 1 || u.PeakOf["team-b"] > 1 {
		t.Fatalf("slots held at once: %d, by tenant %v; want at most 2, 1 each", u.Peak, u.PeakOf)
	}
}

// eventually polls cond every 50ms until it returns nil or timeout
// passes, then fails the test with its last error.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSmallPlainRendersInProcess(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	big := strings.Repeat("#", maxInProcessPlain)
	for _, tc := range []struct {
		name   string
		format string
		files  fstest.MapFS
		want   bool
	}{
		{"small plain", Plain, fstest.MapFS{"manifests/a.yaml": {Data: []byte(cm)}}, true},
		{"plain just under the limit", Plain, fstest.MapFS{"manifests/a.yaml": {Data: []byte(cm + big[:maxInProcessPlain-len(cm)])}}, true},
		{"plain over the limit", Plain, fstest.MapFS{"manifests/a.yaml": {Data: []byte(cm + big)}}, false},
		{"plain over the limit in two files", Plain, fstest.MapFS{
			"manifests/a.yaml": {Data: []byte(big[:maxInProcessPlain/2+1])}, "manifests/b.yaml": {Data: []byte(big[:maxInProcessPlain/2+1])}}, false},
		{"kustomization", Plain, fstest.MapFS{"kustomization.yaml": {Data: []byte("resources: [a.yaml]\n")}, "a.yaml": {Data: []byte(cm)}}, false},
		{"small chart", Helm, fstest.MapFS{"Chart.yaml": {Data: []byte("name: c\nversion: 1.0.0\n")}}, false},
		{"small registry+v1 bundle", RegistryV1, fstest.MapFS{"manifests/a.yaml": {Data: []byte(cm)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(tc.format, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.smallPlain(tc.files); got != tc.want {
				t.Fatalf("smallPlain = %v, want %v", got, tc.want)
			}
		})
	}
}

// Every plain fixture of YAML manifests renders to the same objects, or
// fails with the same error, when a child parses its documents as when
// this process renders it.
func TestPlainDocumentsSameAsInProcess(t *testing.T) {
	child := newFormat(t, Plain, newRunner(t, sandbox.Limits{}))
	local := newFormat(t, Plain, nil)
	p := child.local.(*plain.Format)
	cfg := format.Config{ReleaseName: "rel", InstallNamespace: "ns"}
	dirs := testdata(t, "plain", "bundles")
	dirs = append(dirs, writeFiles(t, map[string]string{"manifests/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n"}))
	compared := 0
	for _, dir := range dirs {
		if !plain.ReadsDocuments(os.DirFS(dir)) {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want, wantErr := local.Objects(context.Background(), os.DirFS(dir), cfg)
			got, err := p.ObjectsParsedBy(context.Background(), os.DirFS(dir), cfg, child.plainDocuments(dir))
			if wantErr != nil || err != nil {
				if wantErr == nil || err == nil || err.Error() != wantErr.Error() {
					t.Fatalf("parsed in a child: %v; in process: %v", err, wantErr)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("objects differ:\nchild:      %v\nin process: %v", got, want)
			}
			compared++
		})
	}
	if compared < 3 {
		t.Fatalf("only %d fixtures compared", compared)
	}
}

// largePlain writes a plain bundle of n ConfigMaps of about 4 KB each in
// two files, the one at changed (if any) with other data.
func largePlain(t *testing.T, n, changed int) string {
	t.Helper()
	pad := strings.Repeat("0123456789abcdef", 256)
	files := map[string]*strings.Builder{"manifests/a.yaml": {}, "manifests/b.yaml": {}}
	for i := 0; i < n; i++ {
		data := "1"
		if i == changed {
			data = "2"
		}
		f := files["manifests/a.yaml"]
		if i%2 == 1 {
			f = files["manifests/b.yaml"]
		}
		fmt.Fprintf(f, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  version: %q\n  pad: %s\n", i, data, pad)
	}
	out := map[string]string{}
	for p, b := range files {
		out[p] = b.String()
	}
	return writeFiles(t, out)
}

// A large plain bundle whose documents were parsed before has only its
// changed documents parsed again, and renders to the same objects as in
// this process.
func TestPlainDocumentsParseOnlyWhatChanged(t *testing.T) {
	f := newFormat(t, Plain, newRunner(t, sandbox.Limits{}))
	f.chunkBytes = 256 << 10 // 7 children for the first render
	local := newFormat(t, Plain, nil)
	cfg := format.Config{InstallNamespace: "ns"}
	counts := func() (parsed, reused float64) {
		return testutil.ToFloat64(metrics.RenderDocuments.WithLabelValues(metrics.DocumentsParsed)),
			testutil.ToFloat64(metrics.RenderDocuments.WithLabelValues(metrics.DocumentsReused))
	}
	const n = 400
	for _, step := range []struct {
		name           string
		changed        int
		parsed, reused float64
	}{
		{"first render", -1, n, 0},
		{"same content again", -1, 0, n},
		{"one document changed", 7, 1, n - 1},
	} {
		t.Run(step.name, func(t *testing.T) {
			dir := largePlain(t, n, step.changed)
			if f.smallPlain(os.DirFS(dir)) {
				t.Fatal("the bundle is small enough to render in process")
			}
			parsed0, reused0 := counts()
			got, err := f.Objects(context.Background(), os.DirFS(dir), cfg)
			if err != nil {
				t.Fatal(err)
			}
			parsed, reused := counts()
			if parsed-parsed0 != step.parsed || reused-reused0 != step.reused {
				t.Errorf("parsed %v and reused %v documents, want %v and %v", parsed-parsed0, reused-reused0, step.parsed, step.reused)
			}
			want, err := local.Objects(context.Background(), os.DirFS(dir), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("objects differ from those rendered in process")
			}
		})
	}
}

func TestDocMemoForgetsLeastRecentlyUsed(t *testing.T) {
	m := newDocMemo(10)
	key := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	m.add(key("a"), []byte("aaaa"))
	m.add(key("b"), []byte("bbbb"))
	if _, ok := m.get(key("a")); !ok { // a is now the most recently used
		t.Fatal("a forgotten")
	}
	m.add(key("c"), []byte("cccc")) // 12 bytes: b goes
	if _, ok := m.get(key("b")); ok {
		t.Error("b kept past the bound")
	}
	for _, k := range []string{"a", "c"} {
		if v, ok := m.get(key(k)); !ok || string(v) != strings.Repeat(k, 4) {
			t.Errorf("%s: %q, %v", k, v, ok)
		}
	}
	m.add(key("d"), []byte("ddddddddddd")) // over the bound alone
	if _, ok := m.get(key("d")); ok || m.size != 8 {
		t.Errorf("a value over the bound was kept (size %d)", m.size)
	}
}

func TestChunksOf(t *testing.T) {
	docs := func(sizes ...int64) []plain.Document {
		var out []plain.Document
		for _, s := range sizes {
			out = append(out, plain.Document{Size: s})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		docs []plain.Document
		want []span
	}{
		{"one small document", docs(3), []span{{0, 1}}},
		{"all in one chunk", docs(3, 3, 3), []span{{0, 3}}},
		{"a chunk ends when it reaches the size", docs(5, 5, 10, 1, 9, 2), []span{{0, 2}, {2, 3}, {3, 5}, {5, 6}}},
		{"a document over the size alone", docs(50, 1), []span{{0, 1}, {1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := chunksOf(tc.docs, 10); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("chunksOf = %v, want %v", got, tc.want)
			}
		})
	}
}

// A large bundle's documents are parsed within one child's time, however
// many children parse them.
func TestPlainDocumentsWithinOneTimeout(t *testing.T) {
	f := newFormat(t, Plain, newRunner(t, sandbox.Limits{Timeout: 100 * time.Millisecond}))
	f.chunkBytes = 16 << 10 // 100 children, at most two at a time
	_, err := f.Objects(context.Background(), os.DirFS(largePlain(t, 400, -1)), format.Config{InstallNamespace: "ns"})
	if failure.Reason(err, "") != v1alpha2.ReasonResourceLimit || !strings.Contains(err.Error(), "did not finish within 100ms") {
		t.Fatalf("error = %v, want ResourceLimit: did not finish within 100ms", err)
	}
}
