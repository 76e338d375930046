//go:build integration

package manager_test

import (
	"strings"
	"testing"

	"github.com/rukpak/rukpak/internal/manager"
)

// TestStopServingV1alpha1NeedsTheCRDWebhook: the CRD webhook's registrar
// is what stops serving v1alpha1, so asking for it without the webhook is
// refused at start instead of being ignored.
func TestStopServingV1alpha1NeedsTheCRDWebhook(t *testing.T) {
	opts := manager.DefaultOptions()
	opts.ServeV1alpha1 = false
	_, err := manager.New(env.Config, opts)
	if err == nil || !strings.Contains(err.Error(), "--serve-v1alpha1=false needs the CRD webhook") {
		t.Fatalf("err = %v, want a refusal naming the CRD webhook", err)
	}
}
