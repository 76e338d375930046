package versionrange_test

import (
	"testing"

	"github.com/rukpak/rukpak/internal/versionrange"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		exact   bool
		wantErr bool
	}{
		{"1.2.3", true, false},
		{"v1.2.3", true, false},
		{"4.x", false, false},
		{"^1.2", false, false},
		{">=1.2 <2", false, false},
		{">=1.2, <2", false, false},
		{"~1.2.0 || 2.x", false, false},
		{"1.2.3 - 1.4", false, false},
		{"*", false, false},
		{"", false, true},
		{"latest", false, true},
		{"1.2", false, true}, // not a strict version, and not a range: name it 1.2.x
		{">=banana", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := versionrange.Parse(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && r.Exact() != tt.exact {
				t.Errorf("Exact() = %v, want %v", r.Exact(), tt.exact)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		constraint string
		version    string
		want       bool
	}{
		{"1.2.3", "1.2.3", true},
		{"1.2.3", "v1.2.3", true},
		{"1.2.3", "1.2.4", false},
		{"1.2.3", "1.2.3+build.7", true},
		{"4.x", "4.11.2", true},
		{"4.x", "5.0.0", false},
		{"4.x", "4.12.0-beta.1", false}, // a pre-release only when the range names one
		{">=4.12.0-0 <5", "4.12.0-beta.1", true},
		{">=1.2 <2", "1.2.0", true},
		{">=1.2 <2", "1.9.9", true},
		{">=1.2 <2", "2.0.0", false},
		{">=1.2 <2", "1.1.9", false},
		{"^1.2", "1.99.0", true},
		{"^0.2", "0.3.0", false},
		{"~1.2.0", "1.2.9", true},
		{"~1.2.0", "1.3.0", false},
		{"~1.2.0 || 2.x", "2.4.0", true},
		{"*", "7.0.0", true},
		{"*", "7.0.0-rc.1", false},
		{"4.x", "latest", false},
		{"4.x", "4.1", false}, // a floating tag is not a release
		{"4.x", "sha-1f2e3d", false},
	}
	for _, tt := range tests {
		t.Run(tt.constraint+" "+tt.version, func(t *testing.T) {
			r, err := versionrange.Parse(tt.constraint)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Matches(tt.version); got != tt.want {
				t.Errorf("%q matches %q = %v, want %v", tt.constraint, tt.version, got, tt.want)
			}
		})
	}
}

func TestNewest(t *testing.T) {
	tags := []string{"latest", "v1.9.0", "1.10.0", "1.10.1-rc.1", "2.0.0", "1.10", "v1.10.0", "0.9.0"}
	tests := []struct {
		constraint string
		want       string
		found      bool
	}{
		{"1.x", "1.10.0", true}, // 1.10.0 and v1.10.0 are one version: the name without v first
		{">=1.10.1-0 <2", "1.10.1-rc.1", true},
		{"2.x", "2.0.0", true},
		{"3.x", "", false},
		{"1.9.0", "v1.9.0", true},
		{"<1", "0.9.0", true},
	}
	for _, tt := range tests {
		t.Run(tt.constraint, func(t *testing.T) {
			r, err := versionrange.Parse(tt.constraint)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := r.Newest(tags)
			if ok != tt.found || got.Name != tt.want {
				t.Errorf("Newest = %q, %v; want %q, %v", got.Name, ok, tt.want, tt.found)
			}
		})
	}
}

func TestSort(t *testing.T) {
	got := versionrange.Sort([]string{"1.0.0", "x", "2.0.0-alpha", "2.0.0", "v1.5.0", "1.5.0+b"})
	want := []string{"2.0.0", "2.0.0-alpha", "1.5.0+b", "v1.5.0", "1.0.0"}
	if len(got) != len(want) {
		t.Fatalf("Sort = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i] {
			t.Errorf("Sort[%d] = %q, want %q", i, got[i].Name, want[i])
		}
	}
}
