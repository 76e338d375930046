package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Platform
		wantErr string
	}{
		{in: "linux/amd64,darwin/arm64", want: []Platform{{"linux", "amd64"}, {"darwin", "arm64"}}},
		{in: " linux/arm64 , ", want: []Platform{{"linux", "arm64"}}},
		{in: ""},
		{in: "linux", wantErr: `platform "linux": want os/arch`},
		{in: "linux/arm/v7", wantErr: `platform "linux/arm/v7"`},
		{in: "/amd64", wantErr: `platform "/amd64"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePlatforms(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// Run refuses what it cannot release before building anything.
func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no version", Options{ImagePlatforms: DefaultImagePlatforms}, `release version ""`},
		{"not semver", Options{Version: "0.3", ImagePlatforms: DefaultImagePlatforms}, `release version "0.3"`},
		{"no v", Options{Version: "0.3.0", ImagePlatforms: DefaultImagePlatforms}, `release version "0.3.0"`},
		{"build metadata", Options{Version: "v0.3.0+x", ImagePlatforms: DefaultImagePlatforms}, `release version "v0.3.0+x"`},
		{"no image platforms", Options{Version: "v0.3.0"}, "no image platforms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.OutDir = filepath.Join(t.TempDir(), "dist")
			_, err := Run(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if _, err := os.Stat(tc.opts.OutDir); !os.IsNotExist(err) {
				t.Fatalf("Run wrote %s before refusing", tc.opts.OutDir)
			}
		})
	}
}

// sha256sum -c accepts SHA256SUMS, and catches a changed file.
func TestWriteChecksums(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), "kind: B\n")
	writeFile(t, filepath.Join(dir, "a-linux-amd64"), "binary")
	if err := WriteChecksums(dir, []string{"b.yaml", "a-linux-amd64"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  a-linux-amd64") || !strings.HasSuffix(lines[1], "  b.yaml") {
		t.Fatalf("SHA256SUMS:\n%s", data)
	}
	check := func() error {
		cmd := exec.Command("sha256sum", "-c", ChecksumsFile)
		cmd.Dir = dir
		return cmd.Run()
	}
	if err := check(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, data)
	}
	writeFile(t, filepath.Join(dir, "b.yaml"), "kind: C\n")
	if err := check(); err == nil {
		t.Fatal("sha256sum -c accepted a changed file")
	}
	if err := WriteChecksums(dir, []string{"missing"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("WriteChecksums of a missing file: %v", err)
	}
}
