package message

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// SetCondition sets c in conditions as meta.SetStatusCondition does, with
// its message cut to ConditionMessageLimit (the full message goes to the
// manager's log when the condition changes), and reports whether
// conditions changed.
func SetCondition(conditions *[]metav1.Condition, c metav1.Condition) bool {
	full := c.Message
	cut, wasCut := Cut(full, ConditionMessageLimit)
	c.Message = cut
	changed := meta.SetStatusCondition(conditions, c)
	if wasCut && changed {
		ctrl.Log.WithName("message").Info("condition message cut to the API server's limit; the full message follows",
			"type", c.Type, "reason", c.Reason, "message", full)
	}
	return changed
}
