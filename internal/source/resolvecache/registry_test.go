package resolvecache

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/internal/source/image"
)

// TestFollowersOfOneRepositoryListItOnce: many BundleDeployments that
// follow one range of an image's tags, resolved at once and again within
// the interval, make one tag listing of a real registry on loopback.
func TestFollowersOfOneRepositoryListItOnce(t *testing.T) {
	var listings, manifests atomic.Int32
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/tags/list"):
			listings.Add(1)
		case strings.Contains(r.URL.Path, "/manifests/"):
			manifests.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tag := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(host+"/team/app:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	listings.Store(0)
	manifests.Store(0)

	sources := New(credentials.NewReader(nil, v1alpha2.SystemNamespace)).Wrap(source.Registry{
		v1alpha2.SourceTypeImage: image.New(credentials.NewReader(nil, v1alpha2.SystemNamespace)),
	}).WithDeadline(0)
	follow := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage,
		Image: &v1alpha2.ImageSource{Ref: host + "/team/app", Versions: "1.x", InsecureSkipTLSVerify: true}}
	const followers = 200
	var wg sync.WaitGroup
	for range 2 { // two rounds within the interval
		for range followers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := sources.Resolve(t.Context(), []v1alpha2.BundleSource{follow}, nil, false)
				if err != nil {
					t.Error(err)
					return
				}
				if got[0].Image.ResolvedTag != "1.1.0" {
					t.Errorf("resolved to tag %q, want 1.1.0", got[0].Image.ResolvedTag)
				}
			}()
		}
		wg.Wait()
	}
	if n := listings.Load(); n != 1 {
		t.Errorf("%d followers resolved twice listed the tags %d times, want 1", followers, n)
	}
	if n := manifests.Load(); n != 1 {
		t.Errorf("%d followers resolved twice asked for the manifest %d times, want 1", followers, n)
	}
}
