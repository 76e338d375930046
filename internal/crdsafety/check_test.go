//go:build integration

package crdsafety

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

// TestMain runs the package's tests; Check's reads go to a real API
// server.
func TestMain(m *testing.M) { envtest.Run(m, &env) }

// install creates crd with a unique name and returns the installed copy
// (with its status.storedVersions); the CRD is deleted after the test.
func install(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatalf("creating CRD: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	installed := &apiextensionsv1.CustomResourceDefinition{}
	envtest.Eventually(t, 20*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, installed); err != nil {
			return err
		}
		for _, c := range installed.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not established", crd.Name)
	})
	return installed
}

// unique renames a CRD built by newCRD (widgets.example.com) to a name of
// its own, so that tests do not share custom resources.
func unique(crd *apiextensionsv1.CustomResourceDefinition, suffix string) *apiextensionsv1.CustomResourceDefinition {
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{
		Plural: "widgets" + suffix, Singular: "widget" + suffix, Kind: "Widget" + suffix, ListKind: "Widget" + suffix + "List",
	}
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	return crd
}

// store creates objects of crd at version in namespace default, with
// status (when set) written through the status subresource.
func store(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string, objs []stored) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		obj := widget(crd.Spec.Group+"/"+version, "default", o.name, o.spec)
		obj.SetKind(crd.Spec.Names.Kind)
		envtest.Eventually(t, 20*time.Second, func() error { return env.Client.Create(ctx, obj.DeepCopy()) })
		if o.status == "" {
			continue
		}
		envtest.Eventually(t, 10*time.Second, func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: o.name}, live); err != nil {
				return err
			}
			live.Object["status"] = withStatusJSON(obj, o.status).Object["status"]
			return env.Client.Status().Update(ctx, live)
		})
	}
}

// stored is an object to store: its name and JSON spec and status.
type stored struct{ name, spec, status string }

const (
	// oldStyleStatus is a status written by the operator before its move
	// to metav1.Condition: no reason, a heartbeat.
	oldStyleStatus = `{"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}`
	// conditionStatus fits both schemas.
	conditionStatus = `{"conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}`
)

// TestCheck runs Check against a real API server: schema changes are
// judged by the objects stored, within the bounds of Options.
func TestCheck(t *testing.T) {
	spec := object(props{"color": str()})
	statusCRD := func(status apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		return newCRD(withStatus(version("v1", spec), status))
	}
	twoVersions := func() *apiextensionsv1.CustomResourceDefinition {
		return newCRD(version("v1", spec), version("v1beta1", spec))
	}
	failing := func(n int) []stored {
		out := make([]stored, n)
		for i := range out {
			out[i] = stored{name: fmt.Sprintf("w%d", i), spec: `{}`, status: oldStyleStatus}
		}
		return out
	}
	const (
		reasonRequired = "Invalid:v1:.status.conditions[*].reason"
		heartbeat      = "Pruned:v1:.status.conditions[*].lastHeartbeatTime"
	)
	tests := []struct {
		name         string
		old, new     *apiextensionsv1.CustomResourceDefinition
		storeAt      string
		objs         []stored
		afterStore   func(*testing.T, *apiextensionsv1.CustomResourceDefinition)
		opts         Options
		wantFindings []string
		wantAccepted []string
		wantMessage  []string
		wantPartial  string
	}{
		{
			name: "status moves to metav1.Condition, no objects",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
		},
		{
			name: "status moves to metav1.Condition, objects fit the new status",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
			objs: []stored{{name: "fits", spec: `{}`, status: conditionStatus}, {name: "no-status", spec: `{}`}},
		},
		{
			name: "status moves to metav1.Condition, an object with an old-style status",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
			objs:         []stored{{name: "fits", spec: `{}`, status: conditionStatus}, {name: "old-style", spec: `{}`, status: oldStyleStatus}},
			wantFindings: []string{heartbeat, "Invalid:v1:.status.conditions[*].message", reasonRequired},
			wantMessage: []string{
				"[" + reasonRequired + "] optional field became required; maxLength tightened from none to 1024; minLength tightened from none to 1; " +
					"existing objects failing it: default/old-style (status.conditions[0].reason: Required value)",
				"[" + heartbeat + "] field removed; existing values would be pruned; existing objects holding a value there: " +
					"default/old-style (status.conditions[0].lastHeartbeatTime: value would be pruned)",
			},
		},
		{
			name: "the same, every finding accepted",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
			objs:         []stored{{name: "old-style", spec: `{}`, status: oldStyleStatus}},
			opts:         Options{Accepted: []string{reasonRequired, "Invalid:v1:.status.conditions[*].message", heartbeat, "ScopeChanged"}},
			wantAccepted: []string{heartbeat, "Invalid:v1:.status.conditions[*].message", reasonRequired},
		},
		{
			name: "the same, one finding accepted",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
			objs:         []stored{{name: "old-style", spec: `{}`, status: oldStyleStatus}},
			opts:         Options{Accepted: []string{heartbeat}},
			wantFindings: []string{"Invalid:v1:.status.conditions[*].message", reasonRequired},
			wantAccepted: []string{heartbeat},
		},
		{
			name: "more objects than read: the first ones, in pages",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
			objs:         failing(5),
			opts:         Options{MaxObjects: 3, PageSize: 2, MaxObjectsPerFinding: 2, Accepted: []string{"Invalid:v1:.status.conditions[*].message", heartbeat}},
			wantFindings: []string{reasonRequired},
			wantAccepted: []string{heartbeat, "Invalid:v1:.status.conditions[*].message"},
			wantMessage:  []string{"default/w0 (status.conditions[0].reason: Required value), default/w1 (status.conditions[0].reason: Required value), and at least 1 more"},
			wantPartial:  "only the first 3 objects at version v1 were checked",
		},
		{
			name: "enough failing objects end the check",
			old:  statusCRD(oldConditions()), new: statusCRD(newConditions()),
			objs:         failing(4),
			opts:         Options{MaxFailingObjects: 2, PageSize: 1},
			wantFindings: []string{heartbeat, "Invalid:v1:.status.conditions[*].message", reasonRequired},
			wantPartial:  "checking version v1 stopped after 2 failing objects",
		},
		{
			name: "served version dropped, no objects",
			old:  twoVersions(), new: newCRD(version("v1", spec)),
		},
		{
			name: "served version dropped with an object",
			old:  twoVersions(), new: newCRD(version("v1", spec)),
			objs:         []stored{{name: "w", spec: `{"color": "red"}`}},
			wantFindings: []string{"ServedVersionDropped:v1beta1"},
			wantMessage:  []string{"[ServedVersionDropped:v1beta1] served version removed from spec.versions; existing objects: default/w"},
		},
		{
			name: "stored version removed, no objects",
			old: func() *apiextensionsv1.CustomResourceDefinition {
				crd := twoVersions()
				crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
				return crd
			}(),
			new: newCRD(version("v1", spec)),
			afterStore: func(t *testing.T, installed *apiextensionsv1.CustomResourceDefinition) {
				// v1 becomes the storage version: v1beta1 stays stored.
				envtest.Eventually(t, 10*time.Second, func() error {
					if err := env.Client.Get(context.Background(), client.ObjectKey{Name: installed.Name}, installed); err != nil {
						return err
					}
					installed.Spec.Versions[0].Storage, installed.Spec.Versions[1].Storage = true, false
					return env.Client.Update(context.Background(), installed)
				})
			},
			wantFindings: []string{"StoredVersionRemoved:v1beta1"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			suffix := fmt.Sprintf("x%d%s", i, strings.ToLower(envtest.UniqueName("")[1:]))
			suffix = strings.ReplaceAll(suffix, "-", "")
			installed := install(t, unique(tt.old, suffix))
			store(t, installed, "v1", tt.objs)
			if tt.afterStore != nil {
				tt.afterStore(t, installed)
			}
			envtest.Eventually(t, 10*time.Second, func() error {
				return env.Client.Get(context.Background(), client.ObjectKey{Name: installed.Name}, installed)
			})
			res, err := Check(context.Background(), env.Client, installed, unique(tt.new, suffix), tt.opts)
			if err != nil {
				t.Fatalf("Check() error = %v", err)
			}
			if got := ids(res.Findings); !reflect.DeepEqual(got, tt.wantFindings) {
				t.Errorf("findings = %v, want %v\n%s", got, tt.wantFindings, res.Message())
			}
			if got := ids(res.Accepted); !reflect.DeepEqual(got, tt.wantAccepted) {
				t.Errorf("accepted = %v, want %v", got, tt.wantAccepted)
			}
			msg := res.Message()
			if len(tt.wantFindings) > 0 && !strings.HasPrefix(msg, "CRD "+installed.Name+": ") {
				t.Errorf("message %q does not start with the CRD's name", msg)
			}
			for _, want := range tt.wantMessage {
				if !strings.Contains(msg, want) {
					t.Errorf("message\n%s\nlacks\n%s", msg, want)
				}
			}
			if got := strings.Join(res.Partial, "; "); got != tt.wantPartial {
				t.Errorf("partial = %q, want %q", got, tt.wantPartial)
			}
		})
	}
}
