package health

import "testing"

func TestJobProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "complete",
			manifest: `
				apiVersion: batch/v1
				kind: Job
				metadata: {name: migrate, namespace: ns, generation: 1}
				status:
				  succeeded: 1
				  conditions:
				  - {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached}
				  - {type: Complete, status: "True", reason: CompletionsReached}
			`,
			healthy: true,
		},
		{
			name: "running",
			manifest: `
				apiVersion: batch/v1
				kind: Job
				metadata: {name: migrate, namespace: ns, generation: 1}
				status: {active: 1, ready: 1}
			`,
			reason: "job running: 1 active, 0 succeeded",
		},
		{
			name: "failed",
			manifest: `
				apiVersion: batch/v1
				kind: Job
				metadata: {name: migrate, namespace: ns, generation: 1}
				status:
				  failed: 7
				  conditions:
				  - {type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
				  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
			`,
			reason: "job failed: Job has reached the specified backoff limit",
		},
		{
			name: "suspended",
			manifest: `
				apiVersion: batch/v1
				kind: Job
				metadata: {name: migrate, namespace: ns, generation: 2}
				spec: {suspend: true}
				status:
				  conditions:
				  - {type: Suspended, status: "True", reason: JobSuspended}
			`,
			reason: "job suspended",
		},
	})
}

func TestCRDProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "established",
			manifest: `
				apiVersion: apiextensions.k8s.io/v1
				kind: CustomResourceDefinition
				metadata: {name: widgets.example.com, generation: 1}
				status:
				  conditions:
				  - {type: NamesAccepted, status: "True", reason: NoConflicts, message: no conflicts found}
				  - {type: Established, status: "True", reason: InitialNamesAccepted, message: the initial names have been accepted}
			`,
			healthy: true,
		},
		{
			name: "not established yet",
			manifest: `
				apiVersion: apiextensions.k8s.io/v1
				kind: CustomResourceDefinition
				metadata: {name: widgets.example.com, generation: 1}
				status:
				  conditions:
				  - {type: NamesAccepted, status: "True", reason: NoConflicts}
				  - {type: Established, status: "False", reason: Installing, message: the initial names have not been accepted}
			`,
			reason: "condition Established is False: the initial names have not been accepted",
		},
		{
			name: "no status yet",
			manifest: `
				apiVersion: apiextensions.k8s.io/v1
				kind: CustomResourceDefinition
				metadata: {name: widgets.example.com, generation: 1}
			`,
			reason: "condition Established not reported",
		},
		{
			name: "names conflict",
			manifest: `
				apiVersion: apiextensions.k8s.io/v1
				kind: CustomResourceDefinition
				metadata: {name: widgets.example.com, generation: 2}
				status:
				  conditions:
				  - {type: NamesAccepted, status: "False", reason: ListKindConflict, message: '"WidgetList" is already in use'}
				  - {type: Established, status: "True", reason: InitialNamesAccepted}
			`,
			reason: `condition NamesAccepted is False: "WidgetList" is already in use`,
		},
	})
}

func TestAPIServiceProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "available",
			manifest: `
				apiVersion: apiregistration.k8s.io/v1
				kind: APIService
				metadata: {name: v1beta1.metrics.k8s.io}
				status:
				  conditions:
				  - {type: Available, status: "True", reason: Passed, message: all checks passed}
			`,
			healthy: true,
		},
		{
			name: "service unreachable",
			manifest: `
				apiVersion: apiregistration.k8s.io/v1
				kind: APIService
				metadata: {name: v1beta1.metrics.k8s.io}
				status:
				  conditions:
				  - {type: Available, status: "False", reason: MissingEndpoints, message: endpoints for service/metrics-server in "kube-system" have no addresses}
			`,
			reason: "condition Available is False: endpoints for service/metrics-server",
		},
	})
}

func TestPVCProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "bound",
			manifest: `
				apiVersion: v1
				kind: PersistentVolumeClaim
				metadata: {name: data, namespace: ns}
				spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
				status: {phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}
			`,
			healthy: true,
		},
		{
			name: "pending",
			manifest: `
				apiVersion: v1
				kind: PersistentVolumeClaim
				metadata: {name: data, namespace: ns}
				status: {phase: Pending}
			`,
			reason: "phase is Pending, want Bound",
		},
		{
			name: "no status",
			manifest: `
				apiVersion: v1
				kind: PersistentVolumeClaim
				metadata: {name: data, namespace: ns}
			`,
			reason: "phase is unknown, want Bound",
		},
	})
}

func TestPodProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "ready",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns, generation: 1}
				status:
				  phase: Running
				  observedGeneration: 1
				  conditions:
				  - {type: PodScheduled, status: "True"}
				  - {type: Initialized, status: "True"}
				  - {type: ContainersReady, status: "True"}
				  - {type: Ready, status: "True"}
			`,
			healthy: true,
		},
		{
			name: "succeeded",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns}
				status:
				  phase: Succeeded
				  conditions:
				  - {type: Ready, status: "False", reason: PodCompleted}
			`,
			healthy: true,
		},
		{
			name: "containers not ready",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns}
				status:
				  phase: Running
				  conditions:
				  - type: Ready
				    status: "False"
				    reason: ContainersNotReady
				    message: 'containers with unready status: [app]'
			`,
			reason: "condition Ready is False: containers with unready status: [app]",
		},
		{
			name: "failed",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns}
				status: {phase: Failed, reason: Evicted, message: The node was low on resource memory.}
			`,
			reason: "pod failed: The node was low on resource memory.",
		},
		{
			name: "pending without conditions",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns}
				status: {phase: Pending}
			`,
			reason: "condition Ready not reported",
		},
		{
			name: "stale observedGeneration",
			manifest: `
				apiVersion: v1
				kind: Pod
				metadata: {name: p, namespace: ns, generation: 2}
				status:
				  phase: Running
				  observedGeneration: 1
				  conditions:
				  - {type: Ready, status: "True"}
			`,
			reason: "rollout of generation 2 not observed",
		},
	})
}

func TestGenericProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "Ready True",
			manifest: `
				apiVersion: cert-manager.io/v1
				kind: Certificate
				metadata: {name: tls, namespace: ns, generation: 2}
				status:
				  conditions:
				  - {type: Ready, status: "True", reason: Ready, observedGeneration: 2}
			`,
			healthy: true,
		},
		{
			name: "Ready False",
			manifest: `
				apiVersion: cert-manager.io/v1
				kind: Certificate
				metadata: {name: tls, namespace: ns, generation: 2}
				status:
				  conditions:
				  - {type: Ready, status: "False", reason: Issuing, message: Issuing certificate as Secret does not exist, observedGeneration: 2}
			`,
			reason: "condition Ready is False: Issuing certificate as Secret does not exist",
		},
		{
			name: "Ready condition of an older generation",
			manifest: `
				apiVersion: cert-manager.io/v1
				kind: Certificate
				metadata: {name: tls, namespace: ns, generation: 3}
				status:
				  conditions:
				  - {type: Ready, status: "True", reason: Ready, observedGeneration: 2}
			`,
			reason: "rollout of generation 3 not observed (condition Ready is for generation 2)",
		},
		{
			name: "status observedGeneration older than generation",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 3}
				status:
				  observedGeneration: 2
				  conditions:
				  - {type: Ready, status: "True"}
			`,
			reason: "rollout of generation 3 not observed",
		},
		{
			name: "Ready wins over Available",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Available, status: "True"}
				  - {type: Ready, status: "Unknown", reason: Reconciling}
			`,
			reason: "condition Ready is Unknown: Reconciling",
		},
		{
			name: "Available False",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Available, status: "False"}
			`,
			reason: "condition Available is False",
		},
		{
			name: "Available True",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Available, status: "True"}
			`,
			healthy: true,
		},
		{
			name: "other conditions only",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Synced, status: "False"}
			`,
			healthy: true,
		},
		{
			name: "kstatus: Reconciling True",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Reconciling, status: "True", reason: Provisioning, message: creating the volume}
			`,
			reason: "inprogress: creating the volume",
		},
		{
			name: "kstatus: Stalled True",
			manifest: `
				apiVersion: example.com/v1
				kind: Widget
				metadata: {name: w, namespace: ns, generation: 1}
				status:
				  conditions:
				  - {type: Stalled, status: "True", reason: QuotaExceeded, message: quota exceeded}
			`,
			reason: "failed: quota exceeded",
		},
		{
			name: "kstatus: a kind it knows (ReplicaSet short of replicas)",
			manifest: `
				apiVersion: apps/v1
				kind: ReplicaSet
				metadata: {name: rs, namespace: ns, generation: 1}
				spec: {replicas: 2}
				status: {observedGeneration: 1, replicas: 2, readyReplicas: 1, availableReplicas: 1, fullyLabeledReplicas: 2}
			`,
			reason: "inprogress: Available: 1/2",
		},
		{
			name: "no status at all",
			manifest: `
				apiVersion: v1
				kind: ConfigMap
				metadata: {name: cm, namespace: ns}
				data: {a: b}
			`,
			healthy: true,
		},
	})
}

func TestCheckNilObject(t *testing.T) {
	if got := (*Checker)(nil).Check(nil); got.Healthy || got.Reason != "object not found" {
		t.Fatalf("Check(nil) = %+v", got)
	}
}
