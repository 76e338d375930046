package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deploymentProbe requires a Deployment's rollout to be complete, the way
// `kubectl rollout status` judges it.
func deploymentProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, true); !r.Healthy {
		return r
	}
	if boolField(obj.Object, "spec", "paused") {
		return healthy()
	}
	if c, ok := findCondition(obj, "Progressing"); ok && c.Reason == "ProgressDeadlineExceeded" {
		return unhealthy("progress deadline exceeded: %s", orDefault(c.Message, "no progress"))
	}
	want := intFieldOr(obj.Object, 1, "spec", "replicas")
	replicas := intFieldOr(obj.Object, 0, "status", "replicas")
	updated := intFieldOr(obj.Object, 0, "status", "updatedReplicas")
	available := intFieldOr(obj.Object, 0, "status", "availableReplicas")
	switch {
	case updated != want:
		return unhealthy("%d/%d replicas updated", updated, want)
	case replicas > updated:
		return unhealthy("%d old replicas pending termination", replicas-updated)
	case available < updated:
		return unhealthy("%d/%d replicas available", available, updated)
	}
	return healthy()
}

// statefulSetProbe requires a StatefulSet's replicas to be ready and, with
// the RollingUpdate strategy, updated to the newest revision.
func statefulSetProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, true); !r.Healthy {
		return r
	}
	want := intFieldOr(obj.Object, 1, "spec", "replicas")
	replicas := intFieldOr(obj.Object, 0, "status", "replicas")
	ready := intFieldOr(obj.Object, 0, "status", "readyReplicas")
	if replicas > want {
		return unhealthy("%d extra replicas pending termination", replicas-want)
	}
	if ready < want {
		return unhealthy("%d/%d replicas ready", ready, want)
	}
	if stringField(obj.Object, "spec", "updateStrategy", "type") == "OnDelete" {
		return healthy()
	}
	updated := intFieldOr(obj.Object, 0, "status", "updatedReplicas")
	if partition := intFieldOr(obj.Object, 0, "spec", "updateStrategy", "rollingUpdate", "partition"); partition > 0 {
		// Only ordinals >= partition are updated; the rest keep the
		// current revision on purpose.
		if wantUpdated := max(want-partition, 0); updated < wantUpdated {
			return unhealthy("%d/%d replicas above partition %d updated", updated, wantUpdated, partition)
		}
		return healthy()
	}
	if updated < want {
		return unhealthy("%d/%d replicas updated", updated, want)
	}
	current := stringField(obj.Object, "status", "currentRevision")
	update := stringField(obj.Object, "status", "updateRevision")
	if current != update {
		return unhealthy("rolling update to revision %s not complete", update)
	}
	return healthy()
}

// daemonSetProbe requires a DaemonSet's pods to be scheduled, updated (with
// the RollingUpdate strategy) and available on every node that should run
// one.
func daemonSetProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, true); !r.Healthy {
		return r
	}
	desired := intFieldOr(obj.Object, 0, "status", "desiredNumberScheduled")
	updated := intFieldOr(obj.Object, 0, "status", "updatedNumberScheduled")
	available := intFieldOr(obj.Object, 0, "status", "numberAvailable")
	if stringField(obj.Object, "spec", "updateStrategy", "type") != "OnDelete" && updated < desired {
		return unhealthy("%d/%d pods updated", updated, desired)
	}
	if available < desired {
		return unhealthy("%d/%d pods available", available, desired)
	}
	return healthy()
}
