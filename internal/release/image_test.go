package release

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var testMeta = ImageMeta{Release: "v0.3.0", Commit: "0123abcd", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Source: "https://example.invalid/rukpak"}

// testIndex builds an index for linux/amd64 and linux/arm64 whose
// "binaries" are small files naming their platform.
func testIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	dir := t.TempDir()
	bins := map[Platform]string{}
	for _, p := range DefaultImagePlatforms {
		path := filepath.Join(dir, p.Arch)
		writeFile(t, path, "manager for "+p.String())
		bins[p] = path
	}
	idx, err := BuildImage(bins, DefaultImagePlatforms, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// files lists the flattened file system of img by path.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, _ := io.ReadAll(tr)
			h.PAXRecords = map[string]string{"content": string(data)}
		}
		out[path.Clean(h.Name)] = h
	}
}

func TestBuildImage(t *testing.T) {
	idx := testIndex(t)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	if im.Annotations["org.opencontainers.image.version"] != "v0.3.0" {
		t.Errorf("index annotations %v", im.Annotations)
	}
	for i, want := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}} {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.OS != want.OS || d.Platform.Architecture != want.Architecture || d.Platform.Variant != want.Variant {
			t.Fatalf("manifest %d platform %+v, want %+v", i, d.Platform, want)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.OS != want.OS || cf.Architecture != want.Architecture || c.User != User || c.WorkingDir != WorkingDir ||
			len(c.Entrypoint) != 1 || c.Entrypoint[0] != Entrypoint || len(c.Cmd) != 0 {
			t.Errorf("%s config: os %s arch %s user %q workdir %q entrypoint %q cmd %q", want.Architecture, cf.OS, cf.Architecture, c.User, c.WorkingDir, c.Entrypoint, c.Cmd)
		}
		if !cf.Created.Time.Equal(testMeta.Created) || c.Labels["org.opencontainers.image.revision"] != "0123abcd" || c.Labels["org.opencontainers.image.source"] != testMeta.Source {
			t.Errorf("%s config: created %s labels %v", want.Architecture, cf.Created, c.Labels)
		}
		fs := files(t, img)
		bin := fs["rukpak"]
		if bin == nil || bin.Mode != 0o755 || bin.Uid != 0 || bin.PAXRecords["content"] != "manager for linux/"+want.Architecture {
			t.Errorf("%s: /rukpak is %+v", want.Architecture, bin)
		}
		for name, owner := range map[string]int{"var/cache/rukpak": UID, "home/nonroot": UID, "tmp": 0} {
			if h := fs[name]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != owner {
				t.Errorf("%s: %s is %+v, want a directory owned by %d", want.Architecture, name, h, owner)
			}
		}
		if h := fs["tmp"]; h != nil && h.Mode != 0o1777 {
			t.Errorf("/tmp mode %o, want 1777", h.Mode)
		}
		if h := fs["etc/passwd"]; h == nil || h.PAXRecords["content"] == "" {
			t.Errorf("no /etc/passwd")
		}
	}
}

// The same binaries and metadata give the same digest: the release is
// reproducible.
func TestBuildImageReproducible(t *testing.T) {
	a, err := testIndex(t).Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := testIndex(t).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("digests %s and %s of the same input", a, b)
	}
}

func TestBuildImageRefuses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bins      map[Platform]string
		platforms []Platform
	}{
		{"no platforms", nil, nil},
		{"darwin", map[Platform]string{{"darwin", "arm64"}: "x"}, []Platform{{"darwin", "arm64"}}},
		{"no binary", map[Platform]string{}, []Platform{{"linux", "amd64"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := BuildImage(tc.bins, tc.platforms, testMeta); err == nil {
				t.Fatal("BuildImage succeeded")
			}
		})
	}
}

// The archive is an OCI layout whose index is the one built.
func TestWriteOCIArchive(t *testing.T) {
	idx := testIndex(t)
	path := filepath.Join(t.TempDir(), ImageArchiveFile)
	if err := WriteOCIArchive(idx, path, testMeta.Created); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(testMeta.Created) {
			t.Errorf("%s mtime %s", h.Name, h.ModTime)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, target, string(data))
	}
	// index.json is the index itself: pushing it keeps the digest
	// rukpak.yaml pins.
	indexJSON, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("sha256:%x", sha256.Sum256(indexJSON)); got != wantDigest.String() {
		t.Fatalf("index.json has digest %s, the index %s", got, wantDigest)
	}
	got, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	gotIM, err := got.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantIM, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(gotIM.Manifests) != len(wantIM.Manifests) {
		t.Fatalf("layout lists %d manifests, want %d", len(gotIM.Manifests), len(wantIM.Manifests))
	}
	for i := range wantIM.Manifests {
		if gotIM.Manifests[i].Digest != wantIM.Manifests[i].Digest {
			t.Fatalf("layout manifest %d is %s, want %s", i, gotIM.Manifests[i].Digest, wantIM.Manifests[i].Digest)
		}
		img, err := got.Image(gotIM.Manifests[i].Digest)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := img.Layers(); err != nil {
			t.Fatal(err)
		}
		if len(files(t, img)) == 0 {
			t.Fatalf("image %d of the layout has no files", i)
		}
	}
}
