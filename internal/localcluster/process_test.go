//go:build integration

package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckStages(t *testing.T) {
	const (
		nodeInit = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec: {resourceRef: {apiGroup: v1, kind: Node}}
`
		nodeHeartbeat = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-heartbeat-with-lease}
spec: {resourceRef: {apiGroup: v1, kind: Node}}
`
		podReady = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec: {resourceRef: {apiGroup: v1, kind: Pod}}
`
		// A heartbeat stage for the wrong kind does not count.
		podHeartbeat = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-heartbeat}
spec: {resourceRef: {apiGroup: v1, kind: Pod}}
`
	)
	tests := []struct {
		name string
		docs []string
		want string // "" means no error
	}{
		{"complete", []string{nodeInit, nodeHeartbeat, podReady}, ""},
		{"before the heartbeat was added", []string{nodeInit, podReady}, "have no node-heartbeat stage for Nodes"},
		{"heartbeat of another kind", []string{nodeInit, podHeartbeat, podReady}, "have no node-heartbeat stage for Nodes"},
		{"no pod stages", []string{nodeInit, nodeHeartbeat}, "have no pod-ready stage for Pods"},
		{"empty", nil, "have no node-initialize stage"},
		{"not YAML", []string{"kind: [Stage"}, "decoding kwok stages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), stagesFile)
			if err := os.WriteFile(path, []byte("---"+strings.Join(tt.docs, "---")), 0o644); err != nil {
				t.Fatal(err)
			}
			err := checkStages(path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkStages: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("checkStages = %v, want an error containing %q", err, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), "decoding") && !strings.Contains(err.Error(), "make cluster-bins"):
				t.Fatalf("checkStages = %v, want it to say how to regenerate the stages", err)
			}
		})
	}

	// The stages hack/build-cluster-bins.sh writes pass.
	if err := checkStages(filepath.Join(testBinDir(t), stagesFile)); err != nil {
		t.Fatalf("the stages of the built binaries: %v", err)
	}
}

// TestStartManagerAPIServerGone: with the real kube-apiserver of a
// minimal cluster killed, StartManager says so and starts no manager.
func TestStartManagerAPIServerGone(t *testing.T) {
	t.Parallel()
	c, _, procs := startCluster(t, true)
	var apiserver process
	for _, p := range procs {
		if p.Name == "kube-apiserver" {
			apiserver = p
		}
	}
	if apiserver.PID == 0 {
		t.Fatalf("no kube-apiserver among %+v", procs)
	}
	if err := stopProcesses([]process{apiserver}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "manager-started")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err = c.StartManager(ctx, self, fakeManagerFlag, fakeStartedFlag+"="+started)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver exited") {
		t.Fatalf("StartManager with the API server gone = %v, want an error saying kube-apiserver exited", err)
	}
	if exists(started) {
		t.Fatal("the manager was started although the API server is gone")
	}
}
