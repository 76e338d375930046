package bundledeployment

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/source"
)

// TestUpgradeNotes: what a reconcile announces of the versions its sources
// select, from the status as last written (was) and what it found (now):
// each event once per version (and cause), none for a first install or
// sources that select no version.
func TestUpgradeNotes(t *testing.T) {
	type note struct{ event, eventType, message string }
	available := func(newest, installed string) note {
		return note{metrics.UpgradeAvailable, corev1.EventTypeNormal, "Version " + newest + " is available; version " + installed + " is installed"}
	}
	applied := func(from, to string) note {
		return note{metrics.UpgradeApplied, corev1.EventTypeNormal, "Version " + to + " installed, replacing version " + from}
	}
	approval := func(newest, installed string) note {
		return note{metrics.UpgradeHeld, corev1.EventTypeNormal, "Version " + newest + " waits for approval (spec.upgrade.approval); version " + installed +
			" stays installed; see `rukpakctl approve app`"}
	}
	failed := func(newest, installed string) note {
		return note{metrics.UpgradeHeld, corev1.EventTypeWarning, "Version " + newest +
			" failed and is not retried until the spec or the core.rukpak.io/retry annotation changes; version " + installed + " stays installed"}
	}
	installed := versionsSeen{installed: "1.2.0", newest: "1.2.0"}
	for _, tc := range []struct {
		name     string
		was, now versionsSeen
		upgraded *versionChange
		want     []note
	}{
		{name: "nothing new", was: installed, now: installed},
		{name: "no version selected", now: versionsSeen{}},
		{name: "a first install is no upgrade", now: versionsSeen{installed: "1.2.0", newest: "1.2.0"},
			upgraded: &versionChange{to: "1.2.0"}},
		{name: "a first install held for approval is no upgrade", now: versionsSeen{newest: "1.2.0", waits: waitsForApproval}},
		{name: "a newer version found and installed at once", was: installed, now: versionsSeen{installed: "1.3.0", newest: "1.3.0"},
			upgraded: &versionChange{from: "1.2.0", to: "1.3.0"},
			want:     []note{available("1.3.0", "1.2.0"), applied("1.2.0", "1.3.0")}},
		{name: "a newer version found, being installed", was: installed, now: versionsSeen{installed: "1.2.0", newest: "1.3.0"},
			want: []note{available("1.3.0", "1.2.0")}},
		{name: "found before: not again", was: versionsSeen{installed: "1.2.0", newest: "1.3.0"}, now: versionsSeen{installed: "1.2.0", newest: "1.3.0"}},
		{name: "a newer one still", was: versionsSeen{installed: "1.2.0", newest: "1.3.0"}, now: versionsSeen{installed: "1.2.0", newest: "1.4.0"},
			want: []note{available("1.4.0", "1.2.0")}},
		{name: "installed after it was found", was: versionsSeen{installed: "1.2.0", newest: "1.3.0"}, now: versionsSeen{installed: "1.3.0", newest: "1.3.0"},
			upgraded: &versionChange{from: "1.2.0", to: "1.3.0"},
			want:     []note{applied("1.2.0", "1.3.0")}},
		{name: "a new revision of the same version (config) is no upgrade", was: installed, now: installed,
			upgraded: &versionChange{from: "1.2.0", to: "1.2.0"}},
		{name: "a range set on sources that selected none", was: versionsSeen{}, now: versionsSeen{installed: "1.2.0", newest: "1.2.0"},
			upgraded: &versionChange{to: "1.2.0"}},
		{name: "held for approval", was: installed, now: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsForApproval},
			want: []note{available("1.3.0", "1.2.0"), approval("1.3.0", "1.2.0")}},
		{name: "held for approval before: not again", was: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsForApproval},
			now: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsForApproval}},
		{name: "a newer version waits too", was: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsForApproval},
			now:  versionsSeen{installed: "1.2.0", newest: "1.4.0", waits: waitsForApproval},
			want: []note{available("1.4.0", "1.2.0"), approval("1.4.0", "1.2.0")}},
		{name: "approved, then failed: another cause", was: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsForApproval},
			now:  versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsFailed},
			want: []note{failed("1.3.0", "1.2.0")}},
		{name: "failed and rolled back", was: versionsSeen{installed: "1.3.0", newest: "1.3.0"},
			now:  versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsFailed},
			want: []note{failed("1.3.0", "1.2.0")}},
		{name: "failed before: not again", was: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsFailed},
			now: versionsSeen{installed: "1.2.0", newest: "1.3.0", waits: waitsFailed}},
		{name: "a revision of the installed version marked failed holds no version", was: installed,
			now: versionsSeen{installed: "1.2.0", newest: "1.2.0", waits: waitsFailed}},
		{name: "the unknown installed version found again is no upgrade", was: versionsSeen{newest: "1.2.0"}, now: installed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []note
			for _, n := range upgradeNotes("app", tc.was, tc.now, tc.upgraded) {
				wantReason := map[string]string{metrics.UpgradeAvailable: v1alpha2.ReasonUpgradeAvailable,
					metrics.UpgradeApplied: v1alpha2.ReasonUpgradeApplied, metrics.UpgradeHeld: v1alpha2.ReasonUpgradeHeld}[n.event]
				if n.reason != wantReason {
					t.Errorf("event %s has reason %q, want %q", n.event, n.reason, wantReason)
				}
				got = append(got, note{n.event, n.eventType, n.message})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("notes =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestVersionsSeen: why the newest version waits, as the status as last
// written says it and as a reconcile found it.
func TestVersionsSeen(t *testing.T) {
	held := &v1alpha2.BundleDeploymentReview{Revision: "app-2", Digest: "sha256:2"}
	approved := &v1alpha2.BundleDeploymentReview{Revision: "app-2", Digest: "sha256:2", Approved: true}
	for _, tc := range []struct {
		status v1alpha2.BundleDeploymentStatus
		want   waitCause
	}{
		{v1alpha2.BundleDeploymentStatus{}, notWaiting},
		{v1alpha2.BundleDeploymentStatus{Review: approved}, notWaiting},
		{v1alpha2.BundleDeploymentStatus{Review: held}, waitsForApproval},
		{v1alpha2.BundleDeploymentStatus{FailedBundle: "app-2"}, waitsFailed},
		{v1alpha2.BundleDeploymentStatus{FailedBundle: "app-1", Review: held}, waitsForApproval},
	} {
		tc.status.InstalledVersion, tc.status.NewestVersion = "1", "2"
		if got := versionsWritten(&tc.status); got != (versionsSeen{installed: "1", newest: "2", waits: tc.want}) {
			t.Errorf("versionsWritten(%+v) = %+v, want waits %q", tc.status, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		s    scope
		want waitCause
	}{
		{"nothing waits", scope{revision: "app-2"}, notWaiting},
		{"held for approval", scope{revision: "app-2", review: held}, waitsForApproval},
		{"approved", scope{revision: "app-2", review: approved}, notWaiting},
		{"the newest marked failed", scope{revision: "app-2", facts: statusFacts{failed: failedMark{bundle: "app-2"}}}, waitsFailed},
		{"an older one marked failed", scope{revision: "app-3", facts: statusFacts{failed: failedMark{bundle: "app-2"}}}, notWaiting},
		{"no newest revision", scope{facts: statusFacts{failed: failedMark{bundle: "app-2"}}}, notWaiting},
	} {
		if got := versionsFound(&tc.s).waits; got != tc.want {
			t.Errorf("%s: waits %q, want %q", tc.name, got, tc.want)
		}
	}
}

// versionedSources is a registry whose image source selects the tag its
// pin names (source.Versioned).
type versionedSources struct{}

func (versionedSources) Resolve(_ context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	return src, nil
}

func (versionedSources) Unpack(context.Context, v1alpha2.BundleSource, string) error { return nil }

func (versionedSources) SelectedVersion(pinned v1alpha2.BundleSource) string {
	return pinned.Image.ResolvedTag
}

var _ source.Versioned = versionedSources{}

// TestKnowInstalledVersion: the installed version the resolve step can
// tell without an install: none without an active revision, the newest
// when the newest revision is active, the active Bundle's when unknown
// (its sources given, or read), as it was otherwise.
func TestKnowInstalledVersion(t *testing.T) {
	tagged := func(tag string) []v1alpha2.BundleSource {
		return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", ResolvedTag: tag}}}
	}
	bd := testBD(v1alpha2.ApprovalAutomatic)
	yes := true
	owned := func(name, tag string) *v1alpha2.Bundle {
		return &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha2.LabelBundleDeployment: bd.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.BundleDeploymentKind,
					Name: bd.Name, UID: bd.UID, Controller: &yes}}},
			Spec: v1alpha2.BundleSpec{ProvisionerClassName: "cls", Sources: tagged(tag)},
		}
	}
	active := "app-" + strings.Repeat("a", 10)
	planted := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "app-" + strings.Repeat("b", 10)},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: "cls", Sources: tagged("9.9.9")}}
	h := newStepsHarness(t, fakeRenderer{}, v1alpha2.RevisionReview{}, owned(active, "1.2.0"), planted)
	h.r.Sources = source.Registry{v1alpha2.SourceTypeImage: versionedSources{}}
	for _, tc := range []struct {
		name              string
		active, installed string
		given             []v1alpha2.BundleSource
		want              string
	}{
		{name: "nothing active", installed: "1.0.0", want: ""},
		{name: "the newest is active", active: "app-new", installed: "1.2.0", want: "1.3.0"},
		{name: "known: kept", active: active, installed: "1.1.0", want: "1.1.0"},
		{name: "unknown: the sources the resolve read", active: active, given: tagged("1.1.5"), want: "1.1.5"},
		{name: "unknown: its Bundle's", active: active, want: "1.2.0"},
		{name: "unknown, its Bundle not this BundleDeployment's: unknown", active: planted.Name, want: ""},
		{name: "unknown, its Bundle gone: unknown", active: "app-" + strings.Repeat("c", 10), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := h.scope(bd)
			s.revision = "app-new"
			s.facts.active, s.facts.installedVersion, s.facts.newestVersion = tc.active, tc.installed, "1.3.0"
			h.r.knowInstalledVersion(context.Background(), s, tc.given)
			if s.facts.installedVersion != tc.want {
				t.Errorf("installed version %q, want %q", s.facts.installedVersion, tc.want)
			}
		})
	}
}
