package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment"
)

// TestEngineKeysAreTheManagers: diff labels objects as the manager does.
func TestEngineKeysAreTheManagers(t *testing.T) {
	if !reflect.DeepEqual(engineKeys, bundledeployment.EngineKeys) {
		t.Errorf("engineKeys = %+v, the manager's are %+v", engineKeys, bundledeployment.EngineKeys)
	}
}

func TestDriftIgnoreRules(t *testing.T) {
	tests := []struct {
		name    string
		in      []v1alpha2.DriftIgnoreRule
		want    []apply.IgnoreRule
		wantErr string
	}{
		{name: "none", want: []apply.IgnoreRule{}},
		{
			name: "paths parsed as JSON pointers",
			in:   []v1alpha2.DriftIgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web", Paths: []string{"/spec/replicas", "/metadata/annotations/a~1b"}}},
			want: []apply.IgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web", Paths: []apply.FieldPath{{"spec", "replicas"}, {"metadata", "annotations", "a/b"}}}},
		},
		{
			name:    "a bad path is named",
			in:      []v1alpha2.DriftIgnoreRule{{Kind: "ConfigMap", Paths: []string{"/data", "data"}}},
			wantErr: "spec.driftIgnore[0].paths[1]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := driftIgnoreRules(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantMsg  string
	}{
		{name: "any error", err: fmt.Errorf("boom"), wantCode: 1, wantMsg: "boom"},
		{name: "differences found: status 1, nothing printed", err: &exitError{code: diffFound}, wantCode: 1},
		{name: "diff failed", err: &exitError{code: diffFailed, err: fmt.Errorf("bad input")}, wantCode: 2, wantMsg: "bad input"},
		{name: "wrapped", err: fmt.Errorf("x: %w", &exitError{code: diffFailed, err: fmt.Errorf("inner")}), wantCode: 2, wantMsg: "inner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := exitStatus(tt.err)
			if code != tt.wantCode {
				t.Errorf("code = %d, want %d", code, tt.wantCode)
			}
			if (msg == nil) != (tt.wantMsg == "") || (msg != nil && msg.Error() != tt.wantMsg) {
				t.Errorf("message = %v, want %q", msg, tt.wantMsg)
			}
		})
	}
}
