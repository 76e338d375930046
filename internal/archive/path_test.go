package archive

import (
	"strings"
	"testing"

	"github.com/rukpak/rukpak/pkg/failure"
)

func TestCleanEntryPath(t *testing.T) {
	tests := []struct {
		name, want, wantErr string
	}{
		{name: "a", want: "a"},
		{name: "./a//b/", want: "a/b"},
		{name: "a/../b", want: "b"},
		{name: ".", want: "."},
		{name: "./", want: "."},
		{name: "a/..", want: "."},
		{name: "..", wantErr: `archive entry "..": path escapes the destination`},
		{name: "a/../../b", wantErr: "path escapes the destination"},
		{name: "/etc/passwd", wantErr: `archive entry "/etc/passwd": path is absolute`},
		{name: "", wantErr: "path is empty"},
		{name: "a\x00b", wantErr: "path contains a NUL byte"},
	}
	for _, tt := range tests {
		got, err := CleanEntryPath(tt.name)
		if tt.wantErr != "" {
			if f := failure.As(err); f == nil || !strings.Contains(f.Message, tt.wantErr) {
				t.Errorf("CleanEntryPath(%q) error = %v, want a failure containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CleanEntryPath(%q) = %q, %v, want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestCheckSymlinkTarget(t *testing.T) {
	tests := []struct {
		name, target, wantRule string
	}{
		{"a", "b", ""},
		{"a/b/c", "../../d", ""},
		{"a/b/c", "../../", ""},
		{"a/b/c", "./d/./e", ""},
		{"a", ".", ""},
		{"a/b/c", "../../../d", "escapes the destination"},
		{"a", "..", "escapes the destination"},
		{"a", "/d", "is absolute"},
		{"a", "", "symlink has no target"},
		{"a/b", "c/../d", `has ".." after a name`},
		{"a/b", "../c/..", `has ".." after a name`},
	}
	for _, tt := range tests {
		if got := checkSymlinkTarget(tt.name, tt.target); (tt.wantRule == "") != (got == "") || !strings.Contains(got, tt.wantRule) {
			t.Errorf("checkSymlinkTarget(%q, %q) = %q, want %q", tt.name, tt.target, got, tt.wantRule)
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	want := Limits{MaxBytes: 1 << 30, MaxFiles: 100_000, MaxFileBytes: 512 << 20, MaxPathBytes: 32 << 20, MaxRatio: 200}
	if got := DefaultLimits(); got != want {
		t.Fatalf("DefaultLimits() = %+v, want %+v", got, want)
	}
	if got := (Limits{MaxFiles: 7, MaxRatio: -1}).withDefaults(); got != (Limits{MaxBytes: 1 << 30, MaxFiles: 7, MaxFileBytes: 512 << 20, MaxPathBytes: 32 << 20, MaxRatio: 200}) {
		t.Fatalf("withDefaults() = %+v", got)
	}
}
