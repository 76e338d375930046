package review

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// deployment returns a Deployment of image with replicas and extra
// container fields (YAML flow map entries).
func deployment(image string, replicas int, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: op}
spec:
  replicas: %d
  template:
    spec:
      containers:
      - {name: manager, image: %s%s}
      - {name: proxy, image: proxy:1}
`, replicas, image, extra)
}

// secret returns a Secret with data (base64 of values) and stringData.
func secret(data, stringData map[string]string) string {
	s := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata:"
	for k, v := range data {
		s += fmt.Sprintf("\n  %q: %q", k, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	if len(data) == 0 {
		s += " {}"
	}
	s += "\nstringData:"
	for k, v := range stringData {
		s += fmt.Sprintf("\n  %q: %q", k, v)
	}
	if len(stringData) == 0 {
		s += " {}"
	}
	return s + "\n"
}

// TestObjectChanges checks added, changed and removed objects and the
// paths of the fields that change.
func TestObjectChanges(t *testing.T) {
	cm := func(name, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {key: %q}\n", name, value)
	}
	liveDeployment := `apiVersion: apps/v1
kind: Deployment
metadata: {name: op, namespace: op, uid: abc, resourceVersion: "7", labels: {core.rukpak.io/owner-kind: BundleDeployment}}
spec:
  replicas: 1
  progressDeadlineSeconds: 600
  template:
    spec:
      containers:
      - {name: manager, image: op:1, terminationMessagePath: /dev/termination-log}
      - {name: proxy, image: proxy:1}
status: {replicas: 1}
`
	tests := []struct {
		name               string
		active, next, live []string
		added, removed     []string
		changed            []string
		unchanged          int32
	}{
		{
			name:  "first install adds",
			next:  []string{cm("a", "1"), deployment("op:1", 1, "")},
			added: []string{"ConfigMap op/a", "Deployment.apps op/op"},
		},
		{
			name:      "fields that change, containers matched by name",
			active:    []string{cm("a", "1"), cm("gone", "x"), deployment("op:1", 1, "")},
			next:      []string{cm("a", "1"), deployment("op:2", 2, ", args: [--debug]"), cm("b", "2")},
			added:     []string{"ConfigMap op/b"},
			removed:   []string{"ConfigMap op/gone"},
			changed:   []string{"Deployment.apps op/op Revision: spec.replicas, spec.template.spec.containers[name=manager].args, spec.template.spec.containers[name=manager].image"},
			unchanged: 1,
		},
		{
			name:      "compared with the live object: only the fields the new one sets",
			live:      []string{liveDeployment},
			next:      []string{deployment("op:1", 1, "")},
			unchanged: 1,
		},
		{
			name:    "compared with the live object: a field the new one sets differently",
			live:    []string{liveDeployment},
			next:    []string{deployment("op:2", 3, "")},
			changed: []string{"Deployment.apps op/op Live: spec.replicas, spec.template.spec.containers[name=manager].image"},
		},
		{
			name:      "a namespace written out as the install namespace is no change",
			active:    []string{cm("a", "1")},
			next:      []string{strings.Replace(cm("a", "1"), "{name: a}", "{name: a, namespace: op}", 1)},
			unchanged: 1,
		},
		{
			name:      "a Secret's stringData moved to data is no change",
			active:    []string{secret(nil, map[string]string{"password": "hunter2"})},
			next:      []string{secret(map[string]string{"password": "hunter2"}, nil)},
			unchanged: 1,
		},
		{
			name:    "a Secret's changes are named by key",
			active:  []string{secret(map[string]string{"password": "hunter2", "tls.crt": "cert-one", "old": "x"}, nil)},
			next:    []string{secret(map[string]string{"password": "correct-horse", "tls.crt": "cert-two"}, map[string]string{"token": "s3cr3t-token"})},
			changed: []string{"Secret op/creds Revision: data.old, data.password, data['tls.crt'], data.token"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, objs(t, tt.active...), objs(t, tt.next...), objs(t, tt.live...))
			o := r.Objects
			diffLines(t, "added", refs(o.Added), tt.added)
			diffLines(t, "removed", refs(o.Removed), tt.removed)
			var changed []string
			for _, c := range o.Changed {
				changed = append(changed, fmt.Sprintf("%s %s: %s", ref(c.Object), c.ComparedTo, strings.Join(c.Paths, ", ")))
			}
			diffLines(t, "changed", changed, tt.changed)
			if o.UnchangedCount != tt.unchanged {
				t.Errorf("unchanged = %d, want %d", o.UnchangedCount, tt.unchanged)
			}
		})
	}
}

// TestSecretValuesNeverShown checks that no value of a Secret, plain or
// base64, appears anywhere in a review: compared with the active revision
// or with the live Secret, from data or stringData.
func TestSecretValuesNeverShown(t *testing.T) {
	named := func(name, yaml string) string {
		return strings.Replace(yaml, "metadata: {name: creds}", "metadata: {name: "+name+", namespace: op}", 1)
	}
	r := compute(t,
		objs(t, secret(map[string]string{"password": "hunter2"}, nil)),
		objs(t,
			secret(nil, map[string]string{"password": "correct-horse", "apikey": "s3cr3t-token"}),
			named("creds2", secret(map[string]string{"token": "other-value"}, nil))),
		objs(t, named("creds2", secret(map[string]string{"token": "live-value"}, nil))))
	out, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"hunter2", "correct-horse", "s3cr3t-token", "other-value", "live-value"} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if strings.Contains(string(out), form) {
				t.Errorf("review shows a Secret value %q:\n%s", form, out)
			}
		}
	}
	var changed []string
	for _, c := range r.Objects.Changed {
		changed = append(changed, fmt.Sprintf("%s %s: %s", ref(c.Object), c.ComparedTo, strings.Join(c.Paths, ", ")))
	}
	diffLines(t, "changed", changed, []string{"Secret op/creds Revision: data.apikey, data.password", "Secret op/creds2 Live: data.token"})
}

// refs renders object names as "Kind[.group] [ns/]name".
func refs(os []v1alpha2.ReviewObject) []string {
	out := []string{}
	for _, o := range os {
		out = append(out, ref(o))
	}
	return out
}

// ref renders one object name.
func ref(o v1alpha2.ReviewObject) string {
	return key{group: o.Group, kind: o.Kind, namespace: o.Namespace, name: o.Name}.String()
}
