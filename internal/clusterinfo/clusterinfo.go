// Package clusterinfo reads what a cluster serves (its version and API
// versions) for formats whose output depends on it, such as Helm's
// .Capabilities. Answers are cached for a short time so that rendering
// many revisions costs one discovery round trip, not one each.
package clusterinfo

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/rukpak/rukpak/pkg/format"
)

// DefaultTTL is how long a discovery answer is reused.
const DefaultTTL = 30 * time.Second

// Reader answers with the cluster's capabilities, cached. It is safe for
// concurrent use.
//
// What invalidates the answer: its age (the TTL), and Invalidate. The
// manager's BundleDeployment controller calls Invalidate whenever a
// CustomResourceDefinition or an APIService is created, changed or
// deleted, and when an apply finds that the cluster does not serve a kind
// it mapped, so that a chart rendered after a CRD came (or went) sees it
// in .Capabilities at once.
type Reader struct {
	client discovery.DiscoveryInterface
	ttl    time.Duration
	now    func() time.Time

	mu     sync.Mutex
	cached *format.Capabilities
	at     time.Time
}

// New returns a Reader asking client, reusing an answer for ttl (DefaultTTL
// when zero or less).
func New(client discovery.DiscoveryInterface, ttl time.Duration) *Reader {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Reader{client: client, ttl: ttl, now: time.Now}
}

// Capabilities returns the cluster's version and served API versions. A
// group whose discovery failed (an unavailable aggregated API) is left out
// rather than failing the whole answer. The returned value is shared: do
// not change it.
func (r *Reader) Capabilities() (*format.Capabilities, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cached != nil && r.now().Sub(r.at) < r.ttl {
		return r.cached, nil
	}
	v, err := r.client.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the server version: %w", err)
	}
	_, lists, err := r.client.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering served APIs: %w", err)
	}
	if err != nil && len(lists) == 0 {
		return nil, errors.Join(errors.New("discovering served APIs: no group answered"), err)
	}
	set := map[string]struct{}{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		set[gv.String()] = struct{}{}
		for _, res := range l.APIResources {
			if res.Kind == "" || strings.Contains(res.Name, "/") { // subresources
				continue
			}
			set[gv.String()+"/"+res.Kind] = struct{}{}
		}
	}
	versions := make([]string, 0, len(set))
	for s := range set {
		versions = append(versions, s)
	}
	sort.Strings(versions)
	r.cached = &format.Capabilities{KubeVersion: v.GitVersion, APIVersions: versions}
	r.at = r.now()
	return r.cached, nil
}

// Invalidate drops the cached answer: the next question asks discovery.
func (r *Reader) Invalidate() {
	r.mu.Lock()
	r.cached = nil
	r.mu.Unlock()
}
