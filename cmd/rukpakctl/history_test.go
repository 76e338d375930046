//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// fixtureRev is one Bundle of a lifecycle fixture.
type fixtureRev struct {
	outcome string
	sources []v1alpha2.BundleSource
	config  *v1alpha2.BundleConfig
	// number is its revision number label, 0 for none.
	number int
	// born makes it born complete (spec.unpacked), with no status
	// written but outcome.
	born bool
}

// lifecycle is a BundleDeployment with revisions; active, lastHealthy and
// failed are 1-based indexes into revs, 0 for none.
type lifecycle struct {
	revs                        []fixtureRev
	active, lastHealthy, failed int
}

// create makes BundleDeployment name (following a tag, with config) and its
// revisions name-r000000001… in order, then sets its status. It returns the
// revisions as the API server stored them.
func (l lifecycle) create(t *testing.T, name string) []v1alpha2.Bundle {
	t.Helper()
	ctx := context.Background()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     "ns-" + name,
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
				Image: &v1alpha2.ImageSource{Ref: "quay.io/example/op:latest"}}},
			Config: &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3}`)}},
		},
	}
	if err := testEnv.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha2.Bundle
	for i, r := range l.revs {
		b := &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-r%09d", name, i+1),
				Labels: map[string]string{v1alpha2.LabelBundleDeployment: name},
				// Only Bundles the BundleDeployment controls are its revisions.
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))},
			},
			Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: r.sources, Config: r.config},
		}
		if b.Spec.Sources == nil {
			b.Spec.Sources = []v1alpha2.BundleSource{imageRev(i + 1)}
		}
		if r.number > 0 {
			b.Labels[v1alpha2.LabelRevision] = strconv.Itoa(r.number)
		}
		if r.born {
			b.Spec.Unpacked = &v1alpha2.UnpackRecord{ContentDigest: "sha256:" + hex64(100+i), ObjectCount: 3}
		}
		if err := testEnv.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		if r.outcome != "" && r.born {
			b.Status.Outcome, b.Status.OutcomeMessage = r.outcome, "because\nof "+r.outcome
			if err := testEnv.Client.Status().Update(ctx, b); err != nil {
				t.Fatal(err)
			}
		} else if r.outcome != "" {
			installed := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			b.Status.Outcome, b.Status.OutcomeMessage, b.Status.InstalledAt = r.outcome, "because\nof "+r.outcome, &installed
			if err := testEnv.Client.Status().Update(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, *b)
	}
	rev := func(i int) string {
		if i == 0 {
			return ""
		}
		return out[i-1].Name
	}
	bd.Status = v1alpha2.BundleDeploymentStatus{ActiveBundle: rev(l.active), LastHealthyBundle: rev(l.lastHealthy), FailedBundle: rev(l.failed)}
	if err := testEnv.Client.Status().Update(ctx, bd); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHistory(t *testing.T) {
	kc := kubeconfig(t)
	name := envtest.UniqueName("hist")
	// The first revision was created before revisions were numbered and
	// born complete; the third is born complete, the active and last
	// healthy one, with no status written: it reads as Healthy, installed
	// when it was created.
	revs := lifecycle{
		revs: []fixtureRev{
			{outcome: v1alpha2.OutcomeHealthy},
			{outcome: v1alpha2.OutcomeRolledBack, number: 2, sources: []v1alpha2.BundleSource{
				{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{Repository: "https://example.com/op.git",
					Ref: v1alpha2.GitRef{Branch: "main"}, ResolvedCommit: strings.Repeat("c", 40)}},
				{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{
					{ConfigMap: v1alpha2.LocalObjectReference{Name: "a"}, Digest: "sha256:" + hex64(7)},
					{ConfigMap: v1alpha2.LocalObjectReference{Name: "b"}, Digest: "sha256:" + hex64(8)}}},
			}},
			{number: 3, born: true, sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + hex64(9)}}}},
		},
		active: 3, lastHealthy: 3, failed: 2,
	}.create(t, name)
	created := revs[2].CreationTimestamp.UTC().Format(time.RFC3339)
	other := envtest.UniqueName("hist-other")
	otherRevs := lifecycle{revs: []fixtureRev{{}}, active: 1}.create(t, other)

	tests := []struct {
		name      string
		args      []string   // after "history NAME --kubeconfig KC"
		wantLines [][]string // per line, the fields it must contain
		// wantFirst is each revision line's first field (the number,
		// else the name).
		wantFirst []string
		wantErr   string
	}{
		{name: "table", wantFirst: []string{revs[0].Name, "2", "3"}, wantLines: [][]string{
			{"NUMBER", "REVISION", "CREATED", "SOURCES", "OUTCOME", "MARKERS"},
			{revs[0].Name, "image quay.io/example/op:v1@sha256:000000000000…", "Healthy"},
			{revs[1].Name, "git https://example.com/op.git@cccccccccccc; configMaps a,b", "RolledBack", "failed"},
			{revs[2].Name, "upload sha256:000000000000…", "Healthy", "active,last-healthy"},
		}},
		{name: "wide", args: []string{"-o", "wide"}, wantLines: [][]string{
			{"NUMBER", "REVISION", "INSTALLED", "MESSAGE"},
			{revs[0].Name, "2026-01-02T03:04:05Z", "because of Healthy"},
			{revs[1].Name, "because of RolledBack"},
			{revs[2].Name, created},
		}},
		{name: "unknown output", args: []string{"-o", "toml"}, wantErr: `--output "toml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, _, err := run(t, append([]string{"history", name, "--kubeconfig", kc}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if len(lines) != len(tt.wantLines) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tt.wantLines), stdout)
			}
			for i, want := range tt.wantLines {
				for _, w := range want {
					if !strings.Contains(lines[i], w) {
						t.Errorf("line %d %q does not contain %q", i, lines[i], w)
					}
				}
			}
			for i, want := range tt.wantFirst {
				if got := strings.Fields(lines[i+1])[0]; got != want {
					t.Errorf("line %d %q starts with %q, want %q", i+1, lines[i+1], got, want)
				}
			}
			if strings.Contains(stdout, otherRevs[0].Name) {
				t.Errorf("history lists the revision of another BundleDeployment:\n%s", stdout)
			}
		})
	}

	t.Run("missing BundleDeployment", func(t *testing.T) {
		_, _, err := run(t, "history", "nope", "--kubeconfig", kc)
		if err == nil || !strings.Contains(err.Error(), "getting BundleDeployment nope") {
			t.Fatalf("error = %v, want one naming the missing BundleDeployment", err)
		}
	})

	t.Run("json and yaml", func(t *testing.T) {
		for _, format := range []string{"json", "yaml"} {
			stdout, _, err := run(t, "history", name, "--kubeconfig", kc, "-o", format)
			if err != nil {
				t.Fatal(err)
			}
			list := &v1alpha2.BundleList{}
			if format == "json" {
				err = json.Unmarshal([]byte(stdout), list)
			} else {
				err = yaml.UnmarshalStrict([]byte(stdout), list)
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", format, err, stdout)
			}
			if list.Kind != "BundleList" || len(list.Items) != 3 {
				t.Fatalf("%s: kind %q with %d items", format, list.Kind, len(list.Items))
			}
			for i, b := range list.Items {
				if b.Name != revs[i].Name || b.Kind != v1alpha2.BundleKind || b.ManagedFields != nil {
					t.Errorf("%s item %d: %s %s, managedFields %v", format, i, b.Kind, b.Name, b.ManagedFields)
				}
			}
		}
	})
}

func TestRollback(t *testing.T) {
	kc := kubeconfig(t)
	otherName := envtest.UniqueName("rb-other")
	other := lifecycle{revs: []fixtureRev{{}}, active: 1}.create(t, otherName)
	config := &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":1}`)}}
	healthy := v1alpha2.OutcomeHealthy
	tests := []struct {
		name    string
		fixture lifecycle
		to      func(revs []v1alpha2.Bundle) string // --to; nil for none
		want    int                                 // 1-based revision the spec is pinned to
		wantErr string
	}{
		{name: "default picks lastHealthyBundle",
			fixture: lifecycle{revs: []fixtureRev{{outcome: healthy, config: config}, {outcome: healthy}, {outcome: v1alpha2.OutcomeFailed}},
				active: 3, lastHealthy: 1, failed: 3},
			want: 1},
		{name: "default without an earlier healthy one picks the newest older one that did not fail",
			fixture: lifecycle{revs: []fixtureRev{{outcome: healthy}, {outcome: v1alpha2.OutcomeRolledBack}, {outcome: healthy, config: config}},
				active: 3, lastHealthy: 3},
			want: 1},
		{name: "--to an older revision",
			fixture: lifecycle{revs: []fixtureRev{{outcome: healthy, config: config}, {outcome: healthy}, {outcome: healthy}}, active: 3, lastHealthy: 3},
			to:      func(revs []v1alpha2.Bundle) string { return revs[1].Name }, want: 2},
		{name: "--to another BundleDeployment's revision is refused",
			fixture: lifecycle{revs: []fixtureRev{{outcome: healthy}, {outcome: healthy}}, active: 2, lastHealthy: 2},
			to:      func([]v1alpha2.Bundle) string { return other[0].Name }, wantErr: other[0].Name + " is not a revision of bd/"},
		{name: "--to the active revision is refused",
			fixture: lifecycle{revs: []fixtureRev{{outcome: healthy}, {outcome: healthy}}, active: 2, lastHealthy: 2},
			to:      func(revs []v1alpha2.Bundle) string { return revs[1].Name }, wantErr: "is already the active revision"},
		{name: "nothing older is refused",
			fixture: lifecycle{revs: []fixtureRev{{outcome: healthy}}, active: 1, lastHealthy: 1},
			wantErr: "has no revision older than the active"},
		{name: "only failed older revisions is refused",
			fixture: lifecycle{revs: []fixtureRev{{outcome: v1alpha2.OutcomeFailed}, {outcome: healthy}}, active: 2, lastHealthy: 2},
			wantErr: "has no revision older than the active"},
		{name: "nothing installed is refused",
			fixture: lifecycle{revs: []fixtureRev{{outcome: v1alpha2.OutcomeFailed}}, failed: 1},
			wantErr: "has no active revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := envtest.UniqueName("rb")
			revs := tt.fixture.create(t, name)
			args := []string{"rollback", name, "--kubeconfig", kc}
			if tt.to != nil {
				args = append(args, "--to", tt.to(revs))
			}
			stdout, stderr, err := run(t, args...)
			bd := getBD(t, name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if bd.Generation != 1 {
					t.Errorf("refused rollback changed the spec: generation %d", bd.Generation)
				}
				return
			}
			if err != nil {
				t.Fatalf("rollback: %v\nstderr: %s", err, stderr)
			}
			target := &v1alpha2.Bundle{}
			if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: revs[tt.want-1].Name}, target); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(bd.Spec.Sources, target.Spec.Sources) {
				t.Errorf("spec.sources %+v, want those of %s: %+v", bd.Spec.Sources, target.Name, target.Spec.Sources)
			}
			if !equality.Semantic.DeepEqual(bd.Spec.Config, target.Spec.Config) {
				t.Errorf("spec.config %+v, want that of %s: %+v", bd.Spec.Config, target.Name, target.Spec.Config)
			}
			want := fmt.Sprintf("bd/%s: sources pinned to revision %s (was %s)\n", name, target.Name, bd.Status.ActiveBundle)
			if stdout != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}

			// Rolling back to the same revision again changes nothing.
			stdout, _, err = run(t, "rollback", name, "--kubeconfig", kc, "--to", target.Name)
			if err != nil || !strings.Contains(stdout, "spec already pinned to revision "+target.Name) {
				t.Errorf("second rollback: %v, stdout %q", err, stdout)
			}
			if again := getBD(t, name); again.Generation != bd.Generation {
				t.Errorf("second rollback changed generation %d to %d", bd.Generation, again.Generation)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	kc := kubeconfig(t)
	name := envtest.UniqueName("retry")
	revs := lifecycle{revs: []fixtureRev{{outcome: v1alpha2.OutcomeHealthy}, {outcome: v1alpha2.OutcomeRolledBack}}, active: 1, lastHealthy: 1}.create(t, name)
	setFailed := func() {
		bd := getBD(t, name)
		bd.Status.FailedBundle = revs[1].Name
		if err := testEnv.Client.Status().Update(context.Background(), bd); err != nil {
			t.Fatal(err)
		}
	}
	var last string
	steps := []struct {
		name     string
		before   func()
		wantOut  string
		wantSame bool // the annotation stays as it was
	}{
		{name: "nothing failed", wantOut: "bd/" + name + ": nothing to retry\n", wantSame: true},
		{name: "failed revision", before: setFailed, wantOut: "bd/" + name + ": retrying revision " + revs[1].Name + "\n"},
		{name: "again", wantOut: "bd/" + name + ": retrying revision " + revs[1].Name + "\n"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			stdout, _, err := run(t, "retry", name, "--kubeconfig", kc)
			if err != nil {
				t.Fatal(err)
			}
			if stdout != st.wantOut {
				t.Errorf("stdout %q, want %q", stdout, st.wantOut)
			}
			got := getBD(t, name).Annotations[v1alpha2.AnnotationRetry]
			if (got == last) != st.wantSame {
				t.Fatalf("annotation %q, before %q; want same=%v", got, last, st.wantSame)
			}
			if got != "" {
				if _, err := time.Parse(time.RFC3339Nano, got); err != nil {
					t.Errorf("annotation %q: %v", got, err)
				}
			}
			last = got
		})
	}
}

// TestRevisionsAreOnlyControlledBundles: a Bundle labelled for a
// BundleDeployment but not controlled by it (planted by someone else, or
// left by a deleted BundleDeployment of the same name) is not in its
// history and is never a rollback target, even when status names it.
func TestRevisionsAreOnlyControlledBundles(t *testing.T) {
	ctx := context.Background()
	name := envtest.UniqueName("plant")
	revs := lifecycle{revs: []fixtureRev{{outcome: v1alpha2.OutcomeHealthy}, {}}, active: 2, lastHealthy: 1}.create(t, name)
	bd := &v1alpha2.BundleDeployment{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	stale := *metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))
	stale.UID = "uid-of-a-deleted-one"
	planted := map[string][]metav1.OwnerReference{name + "-r000000000": nil, name + "-r000000099": {stale}}
	for n, refs := range planted {
		b := &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{v1alpha2.LabelBundleDeployment: name}, OwnerReferences: refs},
			Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{imageRev(99)}},
		}
		if err := testEnv.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// Status names a planted one as the last healthy revision.
	bd.Status.LastHealthyBundle = name + "-r000000000"
	if err := testEnv.Client.Status().Update(ctx, bd); err != nil {
		t.Fatal(err)
	}
	got, list, err := loadRevisions(ctx, testEnv.Client, name)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range list {
		names = append(names, b.Name)
	}
	if want := []string{revs[0].Name, revs[1].Name}; !slices.Equal(names, want) {
		t.Fatalf("revisions = %v, want only the controlled %v", names, want)
	}
	for n := range planted {
		if _, err := rollbackTarget(got, list, n); err == nil || !strings.Contains(err.Error(), "is not a revision of bd/"+name) {
			t.Fatalf("rollback --to %s: %v; want it refused as not a revision", n, err)
		}
	}
	// Without --to, the planted last-healthy name is passed over.
	target, err := rollbackTarget(got, list, "")
	if err != nil || target.Name != revs[0].Name {
		t.Fatalf("default rollback target = %v, %v; want %s", target, err, revs[0].Name)
	}
}
