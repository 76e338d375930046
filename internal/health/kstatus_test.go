package health

import (
	"testing"

	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// TestWhereKstatusDiffers pins the objects on which rukpak's built-in
// probes and kstatus (sigs.k8s.io/cli-utils) disagree: the reasons the
// probes of builtins are rukpak's own rather than kstatus's. If a kstatus
// upgrade changes its verdict on one of these, this test says so, and the
// comment in builtin.go should be revisited.
func TestWhereKstatusDiffers(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		// healthy is rukpak's verdict (the probe tests pin its reason).
		healthy bool
		// kstatus is kstatus's verdict on the same object.
		kstatus kstatus.Status
	}{
		{
			name: "a paused Deployment, observed, is healthy",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 5}
				spec: {replicas: 3, paused: true}
				status:
				  observedGeneration: 5
				  replicas: 3
				  updatedReplicas: 0
				  availableReplicas: 3
				  conditions:
				  - {type: Progressing, status: Unknown, reason: DeploymentPaused}
			`,
			healthy: true,
			kstatus: kstatus.InProgressStatus,
		},
		{
			name: "a StatefulSet with OnDelete must still have its replicas ready",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3, updateStrategy: {type: OnDelete}}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 2}
			`,
			healthy: false,
			kstatus: kstatus.CurrentStatus,
		},
		{
			name: "a DaemonSet with OnDelete need not have replaced old pods",
			manifest: `
				apiVersion: apps/v1
				kind: DaemonSet
				metadata: {name: agent, namespace: ns, generation: 4}
				spec: {updateStrategy: {type: OnDelete}}
				status: {observedGeneration: 4, currentNumberScheduled: 3, desiredNumberScheduled: 3, numberAvailable: 3, numberReady: 3, updatedNumberScheduled: 0}
			`,
			healthy: true,
			kstatus: kstatus.InProgressStatus,
		},
		{
			name: "a running Job is not healthy until it completes",
			manifest: `
				apiVersion: batch/v1
				kind: Job
				metadata: {name: migrate, namespace: ns, generation: 1}
				status: {startTime: "2026-01-01T00:00:00Z", active: 1}
			`,
			healthy: false,
			kstatus: kstatus.CurrentStatus,
		},
		{
			name: "a failed Pod is unhealthy",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns}
				status: {phase: Failed, reason: Evicted, message: The node was low on resource memory.}
			`,
			healthy: false,
			kstatus: kstatus.CurrentStatus,
		},
		{
			name: "an APIService must be Available",
			manifest: `
				apiVersion: apiregistration.k8s.io/v1
				kind: APIService
				metadata: {name: v1beta1.metrics.k8s.io}
				status:
				  conditions:
				  - {type: Available, status: "False", reason: MissingEndpoints}
			`,
			healthy: false,
			kstatus: kstatus.CurrentStatus,
		},
		{
			name: "a Ready condition of an older generation is not trusted",
			manifest: `
				apiVersion: cert-manager.io/v1
				kind: Certificate
				metadata: {name: tls, namespace: ns, generation: 3}
				status:
				  conditions:
				  - {type: Ready, status: "True", reason: Ready, observedGeneration: 2}
			`,
			healthy: false,
			kstatus: kstatus.CurrentStatus,
		},
		{
			name: "an Available condition False is unhealthy",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Available, status: "False"}
			`,
			healthy: false,
			kstatus: kstatus.CurrentStatus,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := parse(t, tt.manifest)
			if got := builtinProbe(obj); got.Healthy != tt.healthy {
				t.Fatalf("rukpak: Healthy = %v (%q), want %v", got.Healthy, got.Reason, tt.healthy)
			}
			res, err := kstatus.Compute(obj)
			if err != nil {
				t.Fatalf("kstatus: %v", err)
			}
			if res.Status != tt.kstatus {
				t.Fatalf("kstatus now says %s (%q), not %s: revisit the rule for %s in builtin.go",
					res.Status, res.Message, tt.kstatus, obj.GetKind())
			}
		})
	}
}
