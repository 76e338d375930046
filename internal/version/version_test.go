package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.99.1", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"},
		{Key: "vcs.modified", Value: "true"},
	}}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name, release, commit string
		bi                    *debug.BuildInfo
		want                  Info
		line                  string
	}{{
		name: "release build", release: "v0.3.0", commit: "1234abcd", bi: vcs,
		want: Info{Release: "v0.3.0", Commit: "1234abcd", GoVersion: "go1.99.1", Platform: platform},
		line: "v0.3.0 commit 1234abcd go1.99.1 " + platform,
	}, {
		name: "plain go build", bi: vcs,
		want: Info{Release: Devel, Commit: "abc123", Modified: true, GoVersion: "go1.99.1", Platform: platform},
		line: "devel commit abc123-dirty go1.99.1 " + platform,
	}, {
		name: "no build information",
		want: Info{Release: Devel, GoVersion: runtime.Version(), Platform: platform},
		line: "devel commit unknown " + runtime.Version() + " " + platform,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(tc.release, tc.commit, tc.bi)
			if got != tc.want {
				t.Fatalf("get = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.line {
				t.Fatalf("String = %q, want %q", got.String(), tc.line)
			}
		})
	}
}

func TestLDFlags(t *testing.T) {
	got := LDFlags("v1.2.3", "deadbeef")
	for _, want := range []string{"-X " + Package + ".release=v1.2.3", "-X " + Package + ".commit=deadbeef"} {
		if !strings.Contains(got, want) {
			t.Fatalf("LDFlags = %q, missing %q", got, want)
		}
	}
}
