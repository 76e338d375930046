package bundledeployment

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// TestWaitForKinds: a BundleDeployment whose reconcile ended waiting for a
// kind is woken by the next change of what the cluster serves; one whose
// reconcile was running when the change came runs again at once (the
// change's wake-up could not find it waiting); one that stopped waiting,
// or was forgotten, is not woken.
func TestWaitForKinds(t *testing.T) {
	m := newMemory()
	if woken := m.servedKindsChanged(); len(woken) != 0 {
		t.Fatalf("woken %v with nothing waiting", woken)
	}

	seen := m.servedKindsSeen()
	if m.waitForKinds("a", true, seen) {
		t.Fatal("a: run again although nothing changed while it ran")
	}
	if woken := m.servedKindsChanged(); !slices.Equal(woken, []string{"a"}) {
		t.Fatalf("woken %v, want [a]", woken)
	}

	// b's reconcile runs while a CRD changes.
	seen = m.servedKindsSeen()
	m.servedKindsChanged()
	if !m.waitForKinds("b", true, seen) {
		t.Fatal("b: not run again although what the cluster serves changed while it ran")
	}
	// Its next reconcile starts after the change: it waits.
	if m.waitForKinds("b", true, m.servedKindsSeen()) {
		t.Fatal("b: run again although nothing changed")
	}

	// a is installed now; b's BundleDeployment is deleted.
	m.waitForKinds("a", false, m.servedKindsSeen())
	m.forget("b")
	if woken := m.servedKindsChanged(); len(woken) != 0 {
		t.Fatalf("woken %v, want none", woken)
	}
	// Not waiting, a change while it ran does not matter.
	seen = m.servedKindsSeen()
	m.servedKindsChanged()
	if m.waitForKinds("c", false, seen) {
		t.Fatal("c: run again although it does not wait")
	}
}

// TestWaitsForKind: only a revision that failed with UnknownKind, or an
// installed one whose drift could not be corrected for that reason, waits
// for a kind.
func TestWaitsForKind(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{failure.New(v1alpha2.ReasonUnknownKind, "kind ServiceMonitor is not served"), true},
		{applyFailureOf(v1alpha2.ReasonUnknownKind), true},
		{failure.New(v1alpha2.ReasonValidationFailed, "refused"), false},
		{failure.New(v1alpha2.ReasonNamespaceNotFound, "no namespace"), false},
		{errors.New("connection reset"), false},
	} {
		if got := waitsForKind(&scope{installErr: tt.err}); got != tt.want {
			t.Errorf("waitsForKind(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	// The installed revision's drift not corrected: a kind of it is gone.
	if !waitsForKind(&scope{driftErr: applyFailureOf(v1alpha2.ReasonUnknownKind)}) {
		t.Error("a drift correction that found a kind not served does not wait for it")
	}
}

// applyFailureOf is an error with reason as the apply's failures carry it.
func applyFailureOf(reason string) error {
	return &reasoned{err: errors.New("applying"), reason: &failure.Error{Reason: reason, Message: "applying"}}
}

// TestUnreviewedNote: the ReviewFailed event of a revision let through
// unreviewed says whether it was applied, and when it was not, why.
func TestUnreviewedNote(t *testing.T) {
	review := errors.New("reviewing revision r-2: reading live Widget.example.com team/w: forbidden")
	for _, tt := range []struct {
		name          string
		apply         error
		want, notWant string
	}{
		{"applied", nil, "applied without a review", "not applied"},
		{"refused for permissions", failure.New(v1alpha2.ReasonMissingPermissions, "missing"), "not applied (MissingPermissions", "applied without a review ("},
		{"a transient error", errors.New("connection reset"), "not applied (the apply failed and is retried", "applied without a review ("},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := unreviewedNote(review, tt.apply)
			if !strings.HasPrefix(got, review.Error()) || !strings.Contains(got, tt.want) || strings.Contains(got, tt.notWant) {
				t.Fatalf("note %q: want it to start with the review's error, say %q and not %q", got, tt.want, tt.notWant)
			}
		})
	}
}
