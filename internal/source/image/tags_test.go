//go:build integration

package image

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
)

// versionRegistry is a registry on loopback over TLS with basic auth whose
// repository "app" holds one image per tag, its file "version" holding the
// tag.
type versionRegistry struct {
	*testRegistry
	digests map[string]string // by tag
	pull    *v1alpha2.LocalObjectReference
	ca      *v1alpha2.LocalObjectReference
}

func newVersionRegistry(t *testing.T, tags ...string) *versionRegistry {
	t.Helper()
	r := &versionRegistry{testRegistry: newRegistry(t, regOpts{tls: true, auth: true}), digests: map[string]string{}}
	r.pull = &v1alpha2.LocalObjectReference{Name: pullSecret(t, r.testRegistry, "good")}
	r.ca = &v1alpha2.LocalObjectReference{Name: caSecret(t, r.testRegistry)}
	for _, tag := range tags {
		r.pushVersion(t, tag)
	}
	return r
}

// pushVersion pushes the image of tag.
func (r *versionRegistry) pushVersion(t *testing.T, tag string) {
	t.Helper()
	r.digests[tag] = r.push(t, "app:"+tag, imageOf(t, layerOf(t, tarOf(t, entry{"version", tag}))))
}

// source is a source of the repository with versions.
func (r *versionRegistry) source(versions string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
		Ref: "oci://" + r.host + "/app", Versions: versions, PullSecret: r.pull, CASecret: r.ca,
	}}
}

// published are the tags of the test repository: five versions, among
// them a pre-release, and two tags that are not versions but point to the
// newest image.
var published = []string{"v1.0.0", "1.2.0", "v1.3.0", "1.4.0-rc.1", "2.0.0", "latest", "1.5"}

func TestResolveVersions(t *testing.T) {
	r := newVersionRegistry(t, published...)
	s := testSource(nil)
	tests := []struct {
		versions, want string
	}{
		{">=1.2 <2", "v1.3.0"},
		{"1.x", "v1.3.0"},
		{"~1.2.0", "1.2.0"},
		{"1.2.0", "1.2.0"},
		{"v1.0.0", "v1.0.0"},
		{"1.0.0", "v1.0.0"},            // the tag as published, whatever the constraint writes
		{">=1.4.0-0 <2", "1.4.0-rc.1"}, // a pre-release only when the range names one
		{">=1.4.0-0", "2.0.0"},
		{"*", "2.0.0"}, // never "latest"
	}
	for _, tt := range tests {
		t.Run(tt.versions, func(t *testing.T) {
			src := r.source(tt.versions)
			if !s.Floating(src) {
				t.Fatal("a source with versions and no digest is not floating")
			}
			res := resolve(t, s, r.testRegistry, src)
			if res.err != nil {
				t.Fatalf("Resolve: %v", res.err)
			}
			checkPin(t, res.src, r.digests[tt.want])
			if got := res.src.Image.ResolvedTag; got != tt.want {
				t.Fatalf("resolvedTag = %q, want %q", got, tt.want)
			}
			if s.Floating(res.src) {
				t.Error("the pinned source is floating")
			}
			again := resolve(t, s, r.testRegistry, res.src) // no request: resolve checks it
			if again.err != nil || again.src.Image.Digest != res.src.Image.Digest {
				t.Fatalf("resolving the pinned source: %v, %v", again.src.Image, again.err)
			}
			dir := t.TempDir()
			if err := s.Unpack(context.Background(), res.src, dir); err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			if got, want := readFiles(t, dir), map[string]string{"version": tt.want}; !maps.Equal(got, want) {
				t.Fatalf("unpacked %v, want %v", got, want)
			}
		})
	}
}

func TestResolveVersionsNone(t *testing.T) {
	r := newVersionRegistry(t, published...)
	s := testSource(nil)
	for versions, msg := range map[string]string{
		"3.x":    `has no tag in "3.x" (7 tags published, 5 of them versions)`,
		"1.4.x":  `has no tag in "1.4.x"`, // 1.4.0-rc.1 is a pre-release the range does not name
		"1.5.x":  `has no tag in "1.5.x"`, // the tag "1.5" is not a version
		"1.2.1":  `has no tag in "1.2.1"`,
		">=1 <1": `has no tag in ">=1 <1"`,
	} {
		t.Run(versions, func(t *testing.T) {
			res := resolve(t, s, r.testRegistry, r.source(versions))
			checkErr(t, "Resolve", res.err, v1alpha2.ReasonSourceNotFound, msg)
			if !strings.Contains(res.err.Error(), r.host+"/app") {
				t.Errorf("the error %q does not name the repository", res.err)
			}
		})
	}
	empty := newVersionRegistry(t)
	empty.pushVersion(t, "latest")
	res := resolve(t, s, empty.testRegistry, empty.source("1.x"))
	checkErr(t, "Resolve", res.err, v1alpha2.ReasonSourceNotFound, `has no tag in "1.x" (1 tags published, 0 of them versions)`)
}

func TestResolveVersionsFollows(t *testing.T) {
	r := newVersionRegistry(t, published...)
	s := testSource(nil)
	spec := r.source(">=1.2 <2")
	first := resolve(t, s, r.testRegistry, spec)
	if first.err != nil || first.src.Image.ResolvedTag != "v1.3.0" {
		t.Fatalf("Resolve: %v, %v", first.src.Image, first.err)
	}
	r.pushVersion(t, "1.6.0")
	r.pushVersion(t, "2.1.0")        // out of range
	r.pushVersion(t, "1.7.0-beta.1") // a pre-release the range does not name
	next := resolve(t, s, r.testRegistry, spec)
	if next.err != nil {
		t.Fatalf("Resolve: %v", next.err)
	}
	checkPin(t, next.src, r.digests["1.6.0"])
	if next.src.Image.ResolvedTag != "1.6.0" {
		t.Fatalf("resolvedTag = %q, want 1.6.0", next.src.Image.ResolvedTag)
	}
}

// TestResolveVersionsForward checks that a tag selected last, and gone
// since, stays selected while it is newer than what the registry has, and
// that an older one is left for the newest.
func TestResolveVersionsForward(t *testing.T) {
	r := newVersionRegistry(t, published...)
	s := testSource(nil)
	spec := r.source(">=1.2 <2")
	// Resolved as the manager resolves it, through a source.Registry.
	forward := func(previous v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
		res, err := source.Registry{v1alpha2.SourceTypeImage: s}.ResolveFrom(context.Background(), []v1alpha2.BundleSource{spec}, []v1alpha2.BundleSource{previous}, false, nil)
		if err != nil {
			return v1alpha2.BundleSource{}, err
		}
		return res.Pinned[0], nil
	}
	gone := *spec.DeepCopy()
	gone.Image.ResolvedTag, gone.Image.Digest = "v1.9.0", zeroDigest // taken off the registry since
	got, err := forward(gone)
	if err != nil || got.Image.ResolvedTag != "v1.9.0" || got.Image.Digest != zeroDigest {
		t.Fatalf("resolving forward from v1.9.0 = %v, %v; want v1.9.0 kept", got.Image, err)
	}
	older := *spec.DeepCopy()
	older.Image.ResolvedTag, older.Image.Digest = "1.2.0", r.digests["1.2.0"]
	got, err = forward(older)
	if err != nil || got.Image.ResolvedTag != "v1.3.0" || got.Image.Digest != r.digests["v1.3.0"] {
		t.Fatalf("resolving forward from 1.2.0 = %v, %v; want v1.3.0", got.Image, err)
	}
}

func TestResolveVersionsRefused(t *testing.T) {
	r := newVersionRegistry(t, published...)
	t.Run("too many tags", func(t *testing.T) {
		s := testSource(nil)
		s.maxTags = 6
		res := resolve(t, s, r.testRegistry, r.source("1.x"))
		checkErr(t, "Resolve", res.err, v1alpha2.ReasonResourceLimit, "has more than 6 tags, the most read to select a version")
	})
	t.Run("a ref with a tag", func(t *testing.T) {
		src := r.source("1.x")
		src.Image.Ref += ":v1.0.0"
		res := resolve(t, testSource(nil), r.testRegistry, src)
		checkErr(t, "Resolve", res.err, v1alpha2.ReasonUnpackFailed, "with versions must name a repository, without a tag or digest")
	})
	t.Run("an invalid constraint", func(t *testing.T) {
		res := resolve(t, testSource(nil), r.testRegistry, r.source(">=1.x.y"))
		checkErr(t, "Resolve", res.err, v1alpha2.ReasonUnpackFailed, `version constraint ">=1.x.y"`)
	})
	t.Run("a constraint that is not a version", func(t *testing.T) {
		res := resolve(t, testSource(nil), r.testRegistry, r.source("1.5"))
		checkErr(t, "Resolve", res.err, v1alpha2.ReasonUnpackFailed, `version "1.5": not a semantic version`)
	})
	t.Run("no pull secret", func(t *testing.T) {
		src := r.source("1.x")
		src.Image.PullSecret = nil
		res := resolve(t, testSource(nil), r.testRegistry, src)
		checkErr(t, "Resolve", res.err, v1alpha2.ReasonUnpackFailed, "authentication failed for "+r.host)
	})
	t.Run("registry down", func(t *testing.T) {
		down := newVersionRegistry(t, "1.0.0")
		down.status.Store(503)
		res := resolve(t, testSource(nil), down.testRegistry, down.source("1.x"))
		checkErr(t, "Resolve", res.err, transient, "listing the tags of repository oci://"+down.host+"/app")
	})
}

// TestResolveVersionsHugeTagList checks that a registry whose tag list
// never ends is cut short at the byte cap.
func TestResolveVersionsHugeTagList(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/app/tags/list" {
			return // 200 to /v2/: no authentication
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"app","tags":["0.0.0"`)
		chunk := strings.Repeat(`,"0.0.1"`, 1<<14)
		for written := 0; written <= int(maxTagListBytes); written += len(chunk) {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return // the client gave up
			}
		}
		fmt.Fprint(w, `]}`)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
		Ref: host + "/app", Versions: "1.x", InsecureSkipTLSVerify: true}}
	_, err := testSource(nil).Resolve(context.Background(), src)
	checkErr(t, "Resolve", err, v1alpha2.ReasonResourceLimit, fmt.Sprintf("list of tags is larger than %d bytes", maxTagListBytes))
}
