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

// What a failed install means, without a cluster.
func TestDecideFailure(t *testing.T) {
	rollback := failureFacts{onFailure: v1alpha2.OnFailureRollback, lastHealthy: "bd-1"}
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideFailure(tt.err, tt.facts); got != tt.want {
				t.Fatalf("decideFailure = %d, want %d", got, tt.want)
			}
		})
	}
}
