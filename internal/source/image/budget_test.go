package image

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestBudgetNext(t *testing.T) {
	d := archive.DefaultLimits()
	tests := []struct {
		name   string
		limits archive.Limits
		files  map[string]string // already unpacked by earlier layers
		want   archive.Limits
		// wantFail means the budget is exhausted: a terminal
		// UnpackFailed.
		wantFail bool
	}{
		{name: "unset limits take the archive defaults", want: archive.Limits{MaxBytes: d.MaxBytes, MaxFiles: d.MaxFiles}},
		{name: "negative limits take the archive defaults", limits: archive.Limits{MaxBytes: -1, MaxFiles: -1, MaxRatio: 3}, want: archive.Limits{MaxBytes: d.MaxBytes, MaxFiles: d.MaxFiles, MaxRatio: 3}},
		{
			name:   "what earlier layers wrote is spent",
			limits: archive.Limits{MaxBytes: 100, MaxFiles: 10, MaxFileBytes: 50},
			files:  map[string]string{"a": "12345", "b": "123"},
			want:   archive.Limits{MaxBytes: 92, MaxFiles: 8, MaxFileBytes: 50},
		},
		{name: "bytes exhausted", limits: archive.Limits{MaxBytes: 4, MaxFiles: 10}, files: map[string]string{"a": "1234"}, wantFail: true},
		{name: "entries exhausted", limits: archive.Limits{MaxBytes: 100, MaxFiles: 2}, files: map[string]string{"a": "", "b": ""}, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := budget{limits: tt.limits, subject: "example.com/img"}.next(dir)
			if tt.wantFail {
				if failure.Reason(err, "") != v1alpha2.ReasonUnpackFailed {
					t.Fatalf("next() error = %v, want an UnpackFailed failure", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("next() error = %v", err)
			}
			if got != tt.want {
				t.Fatalf("next() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
