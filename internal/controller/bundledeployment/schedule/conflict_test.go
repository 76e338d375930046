package schedule

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestQuietConflicts(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "inventory-x",
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	other := errors.New("connection refused")
	tests := []struct {
		name    string
		err     error
		quiet   bool
		initial ctrl.Result
	}{
		{name: "no error", err: nil},
		{name: "a conflict", err: conflict, quiet: true},
		{name: "a wrapped conflict", err: fmt.Errorf("correcting drift of revision r: %w", fmt.Errorf("saving inventory: %w", conflict)), quiet: true},
		{name: "conflicts joined with the status patch's", err: errors.Join(conflict, fmt.Errorf("patching status: %w", conflict)), quiet: true},
		{name: "a conflict joined with another error", err: errors.Join(conflict, other)},
		{name: "another error", err: other},
		{name: "a conflict wrapping a join with another error", err: fmt.Errorf("x: %w", errors.Join(conflict, other))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result, err := quietConflicts(context.Background(), ctrl.Result{}, tt.err)
			if tt.quiet {
				if err != nil || result.RequeueAfter != conflictRetry {
					t.Fatalf("= %+v, %v; want a requeue after %s and no error", result, err, conflictRetry)
				}
				return
			}
			if err != tt.err || result != (ctrl.Result{}) { //nolint:errorlint // the very same error
				t.Fatalf("= %+v, %v; want %v unchanged", result, err, tt.err)
			}
		})
	}
}
