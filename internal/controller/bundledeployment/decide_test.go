package bundledeployment

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// What every failure of a revision means, without a cluster.
func TestDecideFailure(t *testing.T) {
	rollback := failureFacts{onFailure: v1alpha2.OnFailureRollback, lastHealthy: "bd-1", revision: "bd-2"}
	health := failureFacts{stage: stageHealth, revision: "bd-2", onFailure: v1alpha2.OnFailureRollback, lastHealthy: "bd-1"}
	// at is rollback's facts for a failure at stage st.
	at := func(st stage) failureFacts {
		f := rollback
		f.stage = st
		return f
	}
	tests := []struct {
		name  string
		err   error
		facts failureFacts
		want  verdict
	}{
		{"a lost connection is the queue's to retry", errors.New("connection refused"), rollback, verdictError},
		{"a conflict is the queue's to retry", apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed")), rollback, verdictError},
		{"a missing permission waits for an admin", failure.New(v1alpha2.ReasonMissingPermissions, "no"), rollback, verdictWaitForAdmin},
		{"a kind not served yet is retried", failure.New(v1alpha2.ReasonUnknownKind, "no CRD"), rollback, verdictRetry},
		{"a collision during a hand-off waits for it", failure.New(v1alpha2.ReasonCollision, "theirs"), failureFacts{handOffWaits: true}, verdictWaitForHandOff},
		{"a collision otherwise is held", failure.New(v1alpha2.ReasonCollision, "theirs"), rollback, verdictHold},
		{"a failed write rolls back", failure.New(v1alpha2.ReasonApplyFailed, "half"), rollback, verdictRollBack},
		{"a failed hook rolls back", failure.New(v1alpha2.ReasonHookFailed, "job failed"), rollback, verdictRollBack},
		{"wrapped, it still rolls back", fmt.Errorf("applying: %w", failure.New(v1alpha2.ReasonApplyFailed, "half")), rollback, verdictRollBack},
		{"a failed write without a healthy revision is held", failure.New(v1alpha2.ReasonApplyFailed, "half"), failureFacts{onFailure: v1alpha2.OnFailureRollback}, verdictHold},
		{"a failed write with onFailure Hold is held", failure.New(v1alpha2.ReasonApplyFailed, "half"), failureFacts{onFailure: v1alpha2.OnFailureHold, lastHealthy: "bd-1"}, verdictHold},
		{"a refusal before any write is held, never rolled back", failure.New(v1alpha2.ReasonValidationFailed, "bad"), rollback, verdictHold},
		{"a render error is held", failure.New(v1alpha2.ReasonRenderFailed, "template"), rollback, verdictHold},
		{"the last healthy revision failing is held, not rolled back to itself", failure.New(v1alpha2.ReasonApplyFailed, "half"),
			failureFacts{onFailure: v1alpha2.OnFailureRollback, lastHealthy: "bd-1", revision: "bd-1"}, verdictHold},

		// A revision not healthy within its progress deadline.
		{"a missed deadline rolls back", failure.New(v1alpha2.ReasonProgressDeadlineExceeded, "late"), health, verdictRollBack},
		{"a missed deadline with onFailure Hold is left in place", failure.New(v1alpha2.ReasonProgressDeadlineExceeded, "late"),
			failureFacts{stage: stageHealth, revision: "bd-2", onFailure: v1alpha2.OnFailureHold, lastHealthy: "bd-1"}, verdictHold},
		{"a missed deadline without a healthy revision is left in place", failure.New(v1alpha2.ReasonProgressDeadlineExceeded, "late"),
			failureFacts{stage: stageHealth, revision: "bd-2", onFailure: v1alpha2.OnFailureRollback}, verdictHold},
		{"a missed deadline of the last healthy revision is left in place", failure.New(v1alpha2.ReasonProgressDeadlineExceeded, "late"),
			failureFacts{stage: stageHealth, revision: "bd-1", onFailure: v1alpha2.OnFailureRollback, lastHealthy: "bd-1"}, verdictHold},

		// Sources that do not resolve, content that does not unpack.
		{"a source that does not resolve is retried with backoff", failure.New(v1alpha2.ReasonUnpackFailed, "tag not found"), at(stageResolve), verdictBackoff},
		{"content that does not unpack is retried with backoff", failure.New(v1alpha2.ReasonUnpackFailed, "not a tarball"), at(stageUnpack), verdictBackoff},
		{"even a hold reason of a source is retried with backoff", failure.New(v1alpha2.ReasonApplyFailed, "x"), at(stageUnpack), verdictBackoff},
		{"a lost connection while unpacking is the queue's", errors.New("connection refused"), at(stageUnpack), verdictError},

		// A spec the class refuses.
		{"a config the class refuses waits for the spec", failure.New(v1alpha2.ReasonInvalidConfig, "bad values"), at(stageConfig), verdictRefuse},
		{"values that cannot be read for a lost connection are the queue's", errors.New("connection refused"), at(stageConfig), verdictError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideFailure(tt.err, tt.facts); got != tt.want {
				t.Fatalf("decideFailure = %d, want %d", got, tt.want)
			}
		})
	}
}
