package envtest

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FinishJob does the Job controller's last step, which envtest does not
// run: it marks job Complete (or Failed, with reason BackoffLimitExceeded)
// through the status subresource. A Job with ttlSecondsAfterFinished 0 is
// then deleted, as the TTL controller would. A Job finished already is
// left alone (false).
func FinishJob(ctx context.Context, c client.Client, job *batchv1.Job, failed bool) (bool, error) {
	if len(job.Status.Conditions) > 0 || !job.DeletionTimestamp.IsZero() {
		return false, nil
	}
	now := metav1.Now()
	job.Status.StartTime = &now
	if failed {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	} else {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	if err := c.Status().Update(ctx, job); err != nil {
		return false, err
	}
	if ttl := job.Spec.TTLSecondsAfterFinished; ttl != nil && *ttl == 0 {
		return true, client.IgnoreNotFound(c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	}
	return true, nil
}
