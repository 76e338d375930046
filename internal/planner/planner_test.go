package planner_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestIgnoreRules(t *testing.T) {
	tests := []struct {
		name    string
		in      []v1alpha2.DriftIgnoreRule
		want    []apply.IgnoreRule
		wantErr string
	}{
		{name: "none", want: []apply.IgnoreRule{}},
		{
			name: "paths parsed as JSON pointers",
			in:   []v1alpha2.DriftIgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web", Paths: []string{"/spec/replicas", "/metadata/annotations/a~1b"}}},
			want: []apply.IgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web", Paths: []apply.FieldPath{{"spec", "replicas"}, {"metadata", "annotations", "a/b"}}}},
		},
		{
			name:    "a bad path is named",
			in:      []v1alpha2.DriftIgnoreRule{{Kind: "ConfigMap", Paths: []string{"/data", "data"}}},
			wantErr: "spec.driftIgnore[0].paths[1]: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planner.IgnoreRules(tt.in)
			if tt.wantErr != "" {
				f := failure.As(err)
				if f == nil || f.Reason != v1alpha2.ReasonInvalidConfig || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want InvalidConfig starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestEngineOptions(t *testing.T) {
	o := planner.EngineOptions()
	want := apply.Keys{
		OwnerKind: v1alpha2.LabelOwnerKind, OwnerName: v1alpha2.LabelOwnerName, OwnerUID: v1alpha2.LabelOwnerUID,
		Revision: v1alpha2.AnnotationRevision, ReplaceOnImmutable: v1alpha2.AnnotationReplaceOnImmutable, Optional: v1alpha2.AnnotationOptional,
	}
	if o.FieldManager != v1alpha2.FieldManager || o.OwnerKind != v1alpha2.BundleDeploymentKind || o.Keys != want {
		t.Fatalf("EngineOptions() = %+v, want rukpak's field manager, owner kind and keys", o)
	}
}

// certObjects are a Secret that asks for a serving certificate (for
// Service webhook) and a ConfigMap.
func certObjects() []*unstructured.Unstructured {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "webhook-cert", "namespace": "ns",
			"annotations": map[string]any{servingcert.AnnotationServingFor: "webhook"}},
	}}
	return []*unstructured.Unstructured{secret, configMap("settings")}
}

// configMap is a ConfigMap without a namespace.
func configMap(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}
}

// forbidding is a reader that may read nothing.
type forbidding struct{ client.Reader }

func (forbidding) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "webhook-cert", errors.New("no"))
}

func TestFillCerts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		objs       func() []*unstructured.Unstructured
		reader     client.Reader
		unreadable bool
		wantErr    bool
		wantRead   bool
		wantTold   bool
		wantFilled bool
	}{
		{name: "nothing asks: nothing read", objs: func() []*unstructured.Unstructured { return []*unstructured.Unstructured{configMap("a")} }},
		{name: "issued when the Secret is not there", objs: certObjects, reader: fake.NewClientBuilder().Build(), wantRead: true, wantFilled: true},
		{name: "forbidden and told: issued", objs: certObjects, reader: forbidding{}, unreadable: true, wantRead: true, wantTold: true, wantFilled: true},
		{name: "forbidden, no one to tell: fails", objs: certObjects, reader: forbidding{}, wantRead: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var read, told bool
			var due time.Time
			c := planner.Certs{
				Reader:  func() (client.Reader, error) { read = true; return tt.reader, nil },
				Now:     func() time.Time { return now },
				Options: servingcert.DefaultOptions(),
				Due:     func(next time.Time) { due = next },
			}
			if tt.unreadable {
				c.Unreadable = func(error) { told = true }
			}
			objs := tt.objs()
			err := planner.FillCerts(context.Background(), "ns", objs, c)
			if (err != nil) != tt.wantErr || read != tt.wantRead || told != tt.wantTold {
				t.Fatalf("err %v, read %v, told %v; want error %v, read %v, told %v", err, read, told, tt.wantErr, tt.wantRead, tt.wantTold)
			}
			_, filled, _ := unstructured.NestedMap(objs[0].Object, "data")
			if filled != tt.wantFilled || (tt.wantFilled && !due.After(now)) {
				t.Fatalf("filled %v (due %v), want %v", filled, due, tt.wantFilled)
			}
		})
	}
}

// recording is a Preparer that records what it was given.
type recording struct {
	e    *apply.Engine
	objs []*unstructured.Unstructured
	err  error
}

func (r *recording) Prepare(objs []*unstructured.Unstructured, ns string, owner apply.Owner) (*apply.Plan, error) {
	r.objs = objs
	if r.err != nil {
		return nil, r.err
	}
	return r.e.Prepare(objs, ns, owner)
}

func TestPlan(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	engine := apply.New(nil, nil, nil, mapper, planner.EngineOptions())
	prepareFailed := errors.New("prepare failed")
	tests := []struct {
		name        string
		driftIgnore []v1alpha2.DriftIgnoreRule
		prepareErr  error
		wantErr     error
		wantReason  string
	}{
		{name: "certificates filled before Prepare"},
		{name: "with drift ignore rules", driftIgnore: []v1alpha2.DriftIgnoreRule{{Kind: "ConfigMap", Paths: []string{"/data/x"}}}},
		{name: "Prepare's failure as it is", prepareErr: prepareFailed, wantErr: prepareFailed},
		{name: "an invalid rule", driftIgnore: []v1alpha2.DriftIgnoreRule{{Kind: "ConfigMap", Paths: []string{"data"}}}, wantReason: v1alpha2.ReasonInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recording{e: engine, err: tt.prepareErr}
			plan, err := planner.Plan(context.Background(), rec, planner.Revision{
				Objects: certObjects(), Owner: apply.Owner{Name: "bd", Revision: "bd-1"},
				InstallNamespace: "ns", DriftIgnore: tt.driftIgnore,
				Certs: planner.Certs{Reader: func() (client.Reader, error) { return fake.NewClientBuilder().Build(), nil }, Options: servingcert.DefaultOptions()},
			})
			switch {
			case tt.wantErr != nil || tt.wantReason != "":
				if (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || (tt.wantReason != "" && (failure.As(err) == nil || failure.As(err).Reason != tt.wantReason)) {
					t.Fatalf("err = %v, want %v (reason %q)", err, tt.wantErr, tt.wantReason)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if _, filled, _ := unstructured.NestedMap(rec.objs[0].Object, "data"); !filled {
				t.Error("Prepare was given objects without their certificates")
			}
			if plan.Len() != 2 || plan.Objects()[1].GetLabels()[v1alpha2.LabelOwnerName] != "bd" {
				t.Errorf("plan = %d objects (%v), want both, labelled as bd's", plan.Len(), plan.IDs())
			}
		})
	}
}
