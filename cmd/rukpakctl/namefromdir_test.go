package main

import (
	"strings"
	"testing"
)

func TestNameFromDir(t *testing.T) {
	tests := []struct {
		dir, want, err string
	}{
		{dir: "/tmp/my-app", want: "my-app"},
		{dir: "/tmp/My_App v2.1", want: "my-app-v2-1"},
		{dir: "/tmp/metrics-server-1.21+", want: "metrics-server-1-21"},
		{dir: "/tmp/" + strings.Repeat("a", 60), want: strings.Repeat("a", 52)},
		{dir: "/tmp/" + strings.Repeat("a", 51) + "-b", want: strings.Repeat("a", 51)},
		{dir: "/tmp/__", err: "no BundleDeployment name follows from directory /tmp/__: name it, `rukpakctl run NAME /tmp/__`"},
		{dir: "/", err: "no BundleDeployment name follows"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			got, err := nameFromDir(tt.dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("nameFromDir() = %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("nameFromDir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
