package helmrepository

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/helmrepo"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/failure"
)

// fetchTimeout bounds one fetch of an index, from the request to its
// last byte.
const fetchTimeout = 60 * time.Second

// unusedFor is how long an index nobody asked for is kept.
const unusedFor = time.Hour

// maxKeptBytes bounds the bytes of the index files kept together: any
// tenant may name any repository, so what the manager keeps on disk must
// not grow with the number of repositories named. Over it, the indexes
// used least recently (and not in use) are dropped, to be fetched again
// when asked for.
const maxKeptBytes = 1 << 30

// cache holds fetched indexes, one entry per index URL and credentials.
// Entries unused for an hour are dropped with their files, and the files
// kept are bounded by maxKeptBytes.
type cache struct {
	dir     string
	mu      sync.Mutex
	entries map[string]*entry
	now     func() time.Time
}

// entry is one fetched index: its file, what validates it for a
// conditional request, and the charts read of it since it was fetched.
type entry struct {
	// lock is held (a token in it) while the entry is read or fetched.
	lock         chan struct{}
	file         string
	etag         string
	lastModified string
	fetched      time.Time
	used         time.Time
	size         int64
	charts       map[string]chartResult
}

// chartResult is what reading one chart of the entry's index gave.
type chartResult struct {
	chart *helmrepo.Chart
	err   error
}

func newCache() *cache {
	return &cache{entries: map[string]*entry{}, now: time.Now}
}

// get returns the entry of key, after dropping entries unused for long.
func (c *cache) get(key string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, e := range c.entries {
		if k != key && now.Sub(e.used) > unusedFor && len(e.lock) == 0 {
			if e.file != "" {
				_ = os.Remove(e.file)
			}
			delete(c.entries, k)
		}
	}
	e := c.entries[key]
	if e == nil {
		e = &entry{lock: make(chan struct{}, 1)}
		c.entries[key] = e
	}
	e.used = now
	return e
}

// chart returns what the index of h says of h's chart: from the cache
// when the index was fetched less than maxAge ago, else after fetching it
// again (a conditional request when it was fetched before).
func (s *Source) chart(ctx context.Context, h *v1alpha2.HelmRepositorySource) (*helmrepo.Chart, error) {
	indexURL, err := repov1.ResolveReferenceURL(h.URL, "index.yaml")
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Helm repository %s: the URL is not valid", source.RedactURL(h.URL))
	}
	key, err := s.key(ctx, h, indexURL)
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: %w", source.RedactURL(h.URL), err)
	}
	e := s.cache.get(key)
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("chart repository %s: waiting for the index being fetched: %w", source.RedactURL(h.URL), ctx.Err())
	}
	defer func() { <-e.lock }()
	if e.file != "" {
		if _, err := os.Stat(e.file); err != nil {
			// Removed under it (a scratch directory emptied): fetched anew.
			e.file, e.etag, e.lastModified = "", "", ""
		}
	}
	if e.file == "" || s.cache.now().Sub(e.fetched) >= s.maxAge {
		if err := s.fetch(ctx, h, indexURL, key, e); err != nil {
			return nil, err
		}
	}
	if r, ok := e.charts[h.Chart]; ok {
		return r.chart, r.err
	}
	chart, err := s.read(ctx, h, e.file)
	if ctx.Err() == nil {
		e.charts[h.Chart] = chartResult{chart, err}
	}
	return chart, err
}

// read reads h's chart of the index in file.
func (s *Source) read(ctx context.Context, h *v1alpha2.HelmRepositorySource, file string) (*helmrepo.Chart, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: opening its index: %w", source.RedactURL(h.URL), err)
	}
	defer f.Close()
	chart, err := helmrepo.ReadIndex(ctx, f, h.Chart, s.lim)
	switch {
	case err == nil:
		return slim(chart), nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("chart repository %s: %w", source.RedactURL(h.URL), err)
	case errors.Is(err, repov1.ErrNoChartName):
		return nil, failure.New(v1alpha2.ReasonSourceNotFound, "Helm repository %s: its index has no chart %q", source.RedactURL(h.URL), h.Chart)
	case errors.Is(err, helmrepo.ErrTooLarge):
		return nil, failure.New(v1alpha2.ReasonResourceLimit, "Helm repository %s: %v", source.RedactURL(h.URL), err)
	}
	return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Helm repository %s: %v", source.RedactURL(h.URL), err)
}

// slim keeps of c what selecting and pinning a version read — each
// version's name, version, URLs, digest and removal — and drops the rest
// of its metadata (descriptions, annotations, maintainers, …): the result
// is kept in memory for as long as the index, for any chart any tenant
// asks about.
func slim(c *helmrepo.Chart) *helmrepo.Chart {
	out := &helmrepo.Chart{Name: c.Name, Skipped: c.Skipped, Versions: make([]*repov1.ChartVersion, len(c.Versions))}
	for i, v := range c.Versions {
		out.Versions[i] = &repov1.ChartVersion{
			Metadata: &chart.Metadata{APIVersion: v.APIVersion, Name: v.Name, Version: v.Version},
			URLs:     v.URLs, Digest: v.Digest, Removed: v.Removed,
		}
	}
	return out
}

// fetch fetches the index into e, conditionally when e holds one.
func (s *Source) fetch(ctx context.Context, h *v1alpha2.HelmRepositorySource, indexURL, key string, e *entry) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	header := nethttp.Header{}
	if e.file != "" {
		if e.etag != "" {
			header.Set("If-None-Match", e.etag)
		}
		if e.lastModified != "" {
			header.Set("If-Modified-Since", e.lastModified)
		}
	}
	resp, done, err := s.http.Get(ctx, &v1alpha2.HTTPSource{URL: indexURL, Auth: h.Auth, CASecret: h.CASecret,
		InsecureSkipTLSVerify: h.InsecureSkipTLSVerify}, header)
	if err != nil {
		if f := failure.As(err); f != nil {
			return failure.New(f.Reason, "Helm repository %s: fetching its index: %s", source.RedactURL(h.URL), f.Message)
		}
		return fmt.Errorf("chart repository %s: fetching its index: %w", source.RedactURL(h.URL), err)
	}
	defer done()
	now := s.cache.now()
	if resp.StatusCode == nethttp.StatusNotModified && e.file != "" {
		e.fetched = now
		return nil
	}
	if s.lim.MaxBytes > 0 && resp.ContentLength > s.lim.MaxBytes {
		return s.tooLarge(h)
	}
	dir, err := s.cache.workDir()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "index-*.tmp")
	if err != nil {
		return fmt.Errorf("keeping the index of Helm repository %s: %w", source.RedactURL(h.URL), err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	body := io.Reader(resp.Body)
	if s.lim.MaxBytes > 0 {
		body = io.LimitReader(resp.Body, s.lim.MaxBytes+1)
	}
	n, err := io.Copy(tmp, body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("chart repository %s: reading its index: %w", source.RedactURL(h.URL), err)
	}
	if s.lim.MaxBytes > 0 && n > s.lim.MaxBytes {
		return s.tooLarge(h)
	}
	file := filepath.Join(dir, key+".index")
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("keeping the index of Helm repository %s: %w", source.RedactURL(h.URL), err)
	}
	e.file, e.etag, e.lastModified, e.fetched, e.size = file, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), now, n
	e.charts = map[string]chartResult{}
	s.cache.trim(key)
	return nil
}

// trim drops the entries used least recently, but keep's and those in use,
// until the kept files are within maxKeptBytes.
func (c *cache) trim(keep string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for _, e := range c.entries {
		total += e.size
	}
	for total > maxKeptBytes {
		var oldest string
		for k, e := range c.entries {
			// An entry in use holds its lock token; the caller holds keep's.
			if k == keep || len(e.lock) > 0 || e.file == "" {
				continue
			}
			if oldest == "" || e.used.Before(c.entries[oldest].used) {
				oldest = k
			}
		}
		if oldest == "" {
			return
		}
		e := c.entries[oldest]
		_ = os.Remove(e.file)
		total -= e.size
		delete(c.entries, oldest)
	}
}

func (s *Source) tooLarge(h *v1alpha2.HelmRepositorySource) error {
	return failure.New(v1alpha2.ReasonResourceLimit, "Helm repository %s: its index is larger than the limit of %d bytes", source.RedactURL(h.URL), s.lim.MaxBytes)
}

// workDir returns the directory indexes are kept in, made on first use.
func (c *cache) workDir() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" {
		d, err := os.MkdirTemp("", "rukpak-helm-index-")
		if err != nil {
			return "", fmt.Errorf("a directory for Helm repository indexes: %w", err)
		}
		c.dir = d
	} else if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return "", fmt.Errorf("a directory for Helm repository indexes: %w", err)
	}
	return c.dir, nil
}

// key names the cache entry of an index read with h's credentials: a
// digest of the index URL, the credentials' contents, the CA bundle and
// whether TLS is verified, so that no entry answers for other
// credentials.
func (s *Source) key(ctx context.Context, h *v1alpha2.HelmRepositorySource, indexURL string) (string, error) {
	hash := sha256.New()
	field := func(name string, value []byte) {
		fmt.Fprintf(hash, "%s:%d:", name, len(value))
		hash.Write(value)
	}
	field("url", []byte(indexURL))
	field("insecure", fmt.Appendf(nil, "%v", h.InsecureSkipTLSVerify))
	if h.Auth != nil {
		secret, err := s.creds.Secret(ctx, &h.Auth.Secret)
		if err != nil {
			return "", err
		}
		for _, k := range []string{"token", "username", "password"} {
			field(k, secret.Data[k])
		}
	}
	if h.CASecret != nil {
		secret, err := s.creds.Secret(ctx, h.CASecret)
		if err != nil {
			return "", err
		}
		field("ca", secret.Data[credentials.CAKey])
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}
