package health

import "testing"

func TestDeploymentProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "rollout complete",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 3}
				spec: {replicas: 3}
				status:
				  observedGeneration: 3
				  replicas: 3
				  updatedReplicas: 3
				  readyReplicas: 3
				  availableReplicas: 3
				  conditions:
				  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
				  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
			`,
			healthy: true,
		},
		{
			name: "replicas default to one",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 1}
				status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}
			`,
			healthy: true,
		},
		{
			name: "scaled to zero",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 0}
				status: {observedGeneration: 2}
			`,
			healthy: true,
		},
		{
			name: "new generation not observed",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 4}
				spec: {replicas: 3}
				status: {observedGeneration: 3, replicas: 3, updatedReplicas: 3, availableReplicas: 3}
			`,
			reason: "rollout of generation 4 not observed",
		},
		{
			name: "no status yet",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 1}
				spec: {replicas: 3}
			`,
			reason: "rollout of generation 1 not observed",
		},
		{
			name: "updating replicas",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status:
				  observedGeneration: 2
				  replicas: 4
				  updatedReplicas: 1
				  availableReplicas: 3
				  unavailableReplicas: 1
				  conditions:
				  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
			`,
			reason: "1/3 replicas updated",
		},
		{
			name: "old replicas terminating",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status: {observedGeneration: 2, replicas: 4, updatedReplicas: 3, availableReplicas: 4}
			`,
			reason: "1 old replicas pending termination",
		},
		{
			name: "updated replicas not yet available",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 5}
				status: {observedGeneration: 2, replicas: 5, updatedReplicas: 5, availableReplicas: 3, unavailableReplicas: 2}
			`,
			reason: "3/5 replicas available",
		},
		{
			name: "progress deadline exceeded",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status:
				  observedGeneration: 2
				  replicas: 4
				  updatedReplicas: 1
				  availableReplicas: 3
				  conditions:
				  - type: Progressing
				    status: "False"
				    reason: ProgressDeadlineExceeded
				    message: ReplicaSet "web-5d9c7b" has timed out progressing.
			`,
			reason: `progress deadline exceeded: ReplicaSet "web-5d9c7b" has timed out progressing.`,
		},
		{
			name: "paused and observed",
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
		},
		{
			name: "paused but not observed",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 5}
				spec: {replicas: 3, paused: true}
				status: {observedGeneration: 4}
			`,
			reason: "rollout of generation 5 not observed",
		},
	})
}

func TestStatefulSetProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "rolled out",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3, updateStrategy: {type: RollingUpdate}}
				status:
				  observedGeneration: 2
				  replicas: 3
				  readyReplicas: 3
				  updatedReplicas: 3
				  availableReplicas: 3
				  currentRevision: db-7f8b9c
				  updateRevision: db-7f8b9c
			`,
			healthy: true,
		},
		{
			name: "stale observedGeneration",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 3}
				spec: {replicas: 3}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: a, updateRevision: a}
			`,
			reason: "rollout of generation 3 not observed",
		},
		{
			name: "pods not ready",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 1}
				spec: {replicas: 3}
				status: {observedGeneration: 1, replicas: 2, readyReplicas: 1, updatedReplicas: 2, currentRevision: a, updateRevision: a}
			`,
			reason: "1/3 replicas ready",
		},
		{
			name: "scaling down",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 1}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: a, updateRevision: a}
			`,
			reason: "2 extra replicas pending termination",
		},
		{
			name: "rolling update in progress",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-old, updateRevision: db-new}
			`,
			reason: "1/3 replicas updated",
		},
		{
			name: "revision not yet promoted",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-old, updateRevision: db-new}
			`,
			reason: "rolling update to revision db-new not complete",
		},
		{
			name: "partitioned rollout done",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-old, updateRevision: db-new}
			`,
			healthy: true,
		},
		{
			name: "partitioned rollout pending",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-old, updateRevision: db-new}
			`,
			reason: "1/2 replicas above partition 1 updated",
		},
		{
			name: "OnDelete needs only ready replicas",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3, updateStrategy: {type: OnDelete}}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 0, currentRevision: db-old, updateRevision: db-new}
			`,
			healthy: true,
		},
		{
			name: "OnDelete not ready",
			manifest: `
				apiVersion: apps/v1
				kind: StatefulSet
				metadata: {name: db, namespace: ns, generation: 2}
				spec: {replicas: 3, updateStrategy: {type: OnDelete}}
				status: {observedGeneration: 2, replicas: 3, readyReplicas: 2}
			`,
			reason: "2/3 replicas ready",
		},
	})
}

func TestDaemonSetProbe(t *testing.T) {
	runCases(t, nil, []checkCase{
		{
			name: "every node runs an available, updated pod",
			manifest: `
				apiVersion: apps/v1
				kind: DaemonSet
				metadata: {name: agent, namespace: ns, generation: 4}
				status:
				  observedGeneration: 4
				  currentNumberScheduled: 3
				  desiredNumberScheduled: 3
				  numberAvailable: 3
				  numberMisscheduled: 0
				  numberReady: 3
				  updatedNumberScheduled: 3
			`,
			healthy: true,
		},
		{
			name: "stale observedGeneration",
			manifest: `
				apiVersion: apps/v1
				kind: DaemonSet
				metadata: {name: agent, namespace: ns, generation: 5}
				status: {observedGeneration: 4, desiredNumberScheduled: 3, numberAvailable: 3, updatedNumberScheduled: 3}
			`,
			reason: "rollout of generation 5 not observed",
		},
		{
			name: "rolling update in progress",
			manifest: `
				apiVersion: apps/v1
				kind: DaemonSet
				metadata: {name: agent, namespace: ns, generation: 4}
				status: {observedGeneration: 4, desiredNumberScheduled: 3, numberAvailable: 3, updatedNumberScheduled: 1}
			`,
			reason: "1/3 pods updated",
		},
		{
			name: "pods not available",
			manifest: `
				apiVersion: apps/v1
				kind: DaemonSet
				metadata: {name: agent, namespace: ns, generation: 4}
				status: {observedGeneration: 4, desiredNumberScheduled: 3, numberAvailable: 2, numberUnavailable: 1, updatedNumberScheduled: 3}
			`,
			reason: "2/3 pods available",
		},
		{
			name: "OnDelete ignores old pods",
			manifest: `
				apiVersion: apps/v1
				kind: DaemonSet
				metadata: {name: agent, namespace: ns, generation: 4}
				spec: {updateStrategy: {type: OnDelete}}
				status: {observedGeneration: 4, desiredNumberScheduled: 3, numberAvailable: 3, updatedNumberScheduled: 0}
			`,
			healthy: true,
		},
	})
}
