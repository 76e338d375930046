package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
)

// followChart is the chart the followers install.
const followChart = "bench"

// helmRepo is a Helm chart repository served on loopback by the bench:
// an index.yaml of about indexMiB MiB (many other charts, as large public
// repositories have) and the bench chart's archives. It counts what it
// serves: full index fetches, conditional ones answered 304, and chart
// downloads.
type helmRepo struct {
	url      string
	objects  int
	indexMiB int

	mu       sync.Mutex
	index    []byte
	etag     string
	modified time.Time
	charts   map[string][]byte // archive name → bytes

	indexFull, indexNotModified, chartGets atomic.Int64
}

// newHelmRepo serves a repository of versions of the bench chart of
// objects ConfigMaps each, on a loopback port.
func newHelmRepo(objects, indexMiB int, versions ...string) (*helmRepo, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	r := &helmRepo{url: "http://" + ln.Addr().String(), objects: objects, indexMiB: indexMiB, charts: map[string][]byte{}}
	if err := r.publish(versions...); err != nil {
		_ = ln.Close()
		return nil, nil, err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return r, func() { _ = srv.Close() }, nil
}

// ServeHTTP serves the index (conditionally, with ETag and Last-Modified)
// and the chart archives.
func (r *helmRepo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	index, etag, modified := r.index, r.etag, r.modified
	chart, isChart := r.charts[strings.TrimPrefix(req.URL.Path, "/")]
	r.mu.Unlock()
	switch {
	case req.URL.Path == "/index.yaml":
		if req.Header.Get("If-None-Match") == etag {
			r.indexNotModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		r.indexFull.Add(1)
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
		_, _ = w.Write(index)
	case isChart:
		r.chartGets.Add(1)
		_, _ = w.Write(chart)
	default:
		http.NotFound(w, req)
	}
}

// publish makes versions the bench chart's published versions, with an
// index padded to indexMiB with other charts.
func (r *helmRepo) publish(versions ...string) error {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nentries:\n")
	charts := map[string][]byte{}
	fmt.Fprintf(&b, "  %s:\n", followChart)
	for _, v := range versions {
		archive, err := followArchive(v, r.objects)
		if err != nil {
			return err
		}
		file := fmt.Sprintf("%s-%s.tgz", followChart, v)
		charts[file] = archive
		sum := sha256.Sum256(archive)
		fmt.Fprintf(&b, "  - apiVersion: v2\n    name: %s\n    version: %s\n    digest: %s\n    created: \"2026-11-27T00:00:00Z\"\n    urls:\n    - %s\n",
			followChart, v, hex.EncodeToString(sum[:]), file)
	}
	// Other charts, each of a few versions, as in a large public index.
	pad := strings.Repeat("a chart nobody here follows, described at length as public charts are. ", 3)
	for i := 0; b.Len() < r.indexMiB<<20; i++ {
		fmt.Fprintf(&b, "  other-%d:\n", i)
		for v := range 4 {
			fmt.Fprintf(&b, "  - apiVersion: v2\n    name: other-%d\n    version: 0.%d.0\n    description: %s\n    digest: %064d\n    created: \"2026-11-27T00:00:00Z\"\n    urls:\n    - https://charts.example.com/other-%d-0.%d.0.tgz\n",
				i, v, pad, i, i, v)
		}
	}
	sum := sha256.Sum256(b.Bytes())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index, r.etag, r.modified, r.charts = b.Bytes(), `"`+hex.EncodeToString(sum[:8])+`"`, time.Now(), charts
	return nil
}

// followArchive is the bench chart at version: objects ConfigMaps named
// after the release and labelled with the version.
func followArchive(version string, objects int) ([]byte, error) {
	var tpl strings.Builder
	for j := 0; j < objects; j++ {
		fmt.Fprintf(&tpl, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-o%d\n  labels:\n    bench-version: %q\ndata:\n  index: \"%d\"\n", j, version, j)
	}
	files := []struct{ name, body string }{
		{followChart + "/Chart.yaml", fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", followChart, version)},
		{followChart + "/templates/configmaps.yaml", tpl.String()},
	}
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// follower is the i-th BundleDeployment following the bench chart's 1.x.
func follower(i int, c config, url string) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("follow-%d", i)},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm,
			InstallNamespace:     fmt.Sprintf("bench-%d", i%c.namespaces),
			PollInterval:         &metav1.Duration{Duration: v1alpha2.MinPollInterval},
			Sources: []v1alpha2.BundleSource{{
				Type:           v1alpha2.SourceTypeHelmRepository,
				HelmRepository: &v1alpha2.HelmRepositorySource{URL: url, Chart: followChart, Version: "1.x"},
			}},
		},
	}
}

// followScenario measures c.follow BundleDeployments that follow one
// chart of a Helm repository whose index is c.followIndexMiB MiB: the
// install, the index requests while they idle for c.followIdle, and the
// upgrade of them all when a newer version is published; with the
// manager's peak RSS.
func followScenario(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cs kubernetes.Interface) error {
	fmt.Printf("serving a Helm repository with an index of %d MiB\n", c.followIndexMiB)
	repo, stop, err := newHelmRepo(c.objects, c.followIndexMiB, "1.0.0")
	if err != nil {
		return fmt.Errorf("serving a Helm repository: %w", err)
	}
	defer stop()
	if err := createNamespaces(ctx, k, c); err != nil {
		return err
	}
	pid, err := cl.PID("rukpak")
	if err != nil {
		return err
	}
	req0, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}

	start := time.Now()
	if err := parallel(c.follow, c.concurrency, func(i int) error {
		return k.Create(ctx, follower(i, c, repo.url))
	}); err != nil {
		return fmt.Errorf("creating BundleDeployments: %w", err)
	}
	if err := waitInstalled(ctx, k, c.follow, 30*time.Minute); err != nil {
		return err
	}
	install := time.Since(start)
	full, notModified, charts := repo.indexFull.Load(), repo.indexNotModified.Load(), repo.chartGets.Load()
	fmt.Printf("\nfollowers=%d objects/bundle=%d index=%d MiB pollInterval=%s\n", c.follow, c.objects, c.followIndexMiB, v1alpha2.MinPollInterval)
	fmt.Printf("install: all Installed in %s; index fetched %d times in full, %d times answered 304; chart archive downloaded %d times\n",
		install.Round(time.Millisecond), full, notModified, charts)

	// Idle: every follower polls every 10 s.
	repo.indexFull.Store(0)
	repo.indexNotModified.Store(0)
	repo.chartGets.Store(0)
	req1, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	time.Sleep(c.followIdle)
	full, notModified = repo.indexFull.Load(), repo.indexNotModified.Load()
	intervals := c.followIdle.Seconds() / v1alpha2.MinPollInterval.Seconds()
	perInterval := float64(full+notModified) / intervals
	req2, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	idleWrites, idleWhat := writes(req2, req1)
	fmt.Printf("idle %s (%.0f intervals): index requests %d (%d in full, %d answered 304), %.2f per interval for %d followers; API writes %d %s; API requests %s\n",
		c.followIdle, intervals, full+notModified, full, notModified, perInterval, c.follow, idleWrites, idleWhat, req2.top(req1, 6))

	// Upgrade: a newer version in range is published.
	repo.indexFull.Store(0)
	repo.indexNotModified.Store(0)
	repo.chartGets.Store(0)
	if err := repo.publish("1.0.0", "1.1.0"); err != nil {
		return err
	}
	start = time.Now()
	if err := waitLabelled(ctx, k, "bench-version=1.1.0", c.follow*c.objects, 30*time.Minute); err != nil {
		return err
	}
	upgrade := time.Since(start)
	req3, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	rss, err := peakRSS(pid)
	if err != nil {
		return err
	}
	fmt.Printf("upgrade to 1.1.0: every object upgraded %s after it was published; index fetched %d times in full, %d answered 304; chart archive downloaded %d times\n",
		upgrade.Round(time.Millisecond), repo.indexFull.Load(), repo.indexNotModified.Load(), repo.chartGets.Load())
	fmt.Printf("API requests, install: %s\n", req1.top(req0, 10))
	fmt.Printf("API requests, upgrade: %s\n", req3.top(req2, 10))
	fmt.Printf("manager peak RSS: %.1f MiB\n", float64(rss)/1024)
	figure("follow", "index-requests-per-interval", fmt.Sprintf("%.2f", perInterval), "<=2", perInterval <= 2)
	figure("follow", "idle-writes", fmt.Sprint(idleWrites), "0", idleWrites == 0)
	figure("follow", "upgrade-seconds", fmt.Sprintf("%.1f", upgrade.Seconds()), "(report)", true)
	figure("follow", "peak-rss-mib", fmt.Sprintf("%.0f", float64(rss)/1024), "(report)", true)
	return nil
}

// waitLabelled polls until want ConfigMaps carry label (a selector).
func waitLabelled(ctx context.Context, k client.Client, label string, want int, timeout time.Duration) error {
	sel, err := metav1.ParseToLabelSelector(label)
	if err != nil {
		return err
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for last := time.Now(); ; time.Sleep(time.Second) {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
		if err := k.List(ctx, &list, client.MatchingLabelsSelector{Selector: s}); err != nil {
			return fmt.Errorf("listing ConfigMaps labelled %s: %w", label, err)
		}
		if len(list.Items) >= want {
			fmt.Printf("  %d/%d objects labelled %s\n", len(list.Items), want, label)
			return nil
		}
		if time.Since(last) > 5*time.Second {
			fmt.Printf("  %d/%d objects labelled %s\n", len(list.Items), want, label)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d objects labelled %s after %s", len(list.Items), want, label, timeout)
		}
	}
}
