package release

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/internal/crdwebhook"
)

// configDir is the repository's config/.
func configDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config")
}

// decodeAll splits a multi-document manifest into objects.
func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decoding the manifest: %v", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

func TestManifest(t *testing.T) {
	img := Image{Repository: "registry.example/rukpak/rukpak", Tag: "v0.3.0", Digest: "sha256:" + strings.Repeat("ab", 32)}
	data, err := Manifest(configDir(t), img, "v0.3.0")
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, data)
	kinds := map[string]int{}
	byKind := map[string]*unstructured.Unstructured{}
	for i, o := range objs {
		kinds[o.GetKind()]++
		byKind[o.GetKind()+"/"+o.GetName()] = o
		if got := o.GetLabels()["app.kubernetes.io/version"]; got != "v0.3.0" {
			t.Errorf("%s %s: version label %q", o.GetKind(), o.GetName(), got)
		}
		if i == 0 && o.GetKind() != "Namespace" {
			t.Errorf("first object is %s %s, want the Namespace", o.GetKind(), o.GetName())
		}
	}
	// Everything the release must carry.
	for kind, n := range map[string]int{
		"Namespace": 1, "CustomResourceDefinition": 3, "ServiceAccount": 1,
		"ClusterRole": 4, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1,
		"Deployment": 1, "Service": 2, // the webhook and the metrics
		"MutatingAdmissionPolicy": 3, "MutatingAdmissionPolicyBinding": 3, // requested-by, approved-by and the cleanup finalizer
		"ValidatingAdmissionPolicy": 3, "ValidatingAdmissionPolicyBinding": 3, // install and approval authorization, approval lowering
	} {
		if kinds[kind] != n {
			t.Errorf("%d %s objects, want %d (all: %v)", kinds[kind], kind, n, kinds)
		}
	}

	dep := &appsv1.Deployment{}
	convert(t, byKind["Deployment/rukpak-manager"], dep)
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != img.String() {
		t.Errorf("manager image %q, want %q", c.Image, img)
	}
	if !strings.Contains(c.Image, ":v0.3.0@sha256:") {
		t.Errorf("manager image %q is not pinned as tag@digest", c.Image)
	}
	// The pod runs as the image's user, not root, on a read-only root.
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != UID {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and runAsUser %d", pod.SecurityContext, UID)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container securityContext %+v: want a read-only root file system", c.SecurityContext)
	}
	// Writable places: the store and /tmp (webhook certificate).
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	for _, want := range []string{StorageDir, "/tmp"} {
		if !slices.Contains(mounts, want) {
			t.Errorf("no volume at %s (mounts %v)", want, mounts)
		}
	}
	// The CRD webhook is called through a Service that reaches its port.
	svcName := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--crd-webhook-service="); ok {
			svcName = v
		}
	}
	svcObj := byKind["Service/"+svcName]
	if svcName == "" || svcObj == nil {
		t.Fatalf("the manager's --crd-webhook-service %q names no Service of the manifest", svcName)
	}
	svc := &corev1.Service{}
	convert(t, svcObj, svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != crdwebhook.ServicePort {
		t.Errorf("Service %s ports %+v, want one on %d", svcName, svc.Spec.Ports, crdwebhook.ServicePort)
	}
	target := svc.Spec.Ports[0].TargetPort.String()
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == target }) {
		t.Errorf("Service %s targets port %q, which the manager does not name", svcName, target)
	}
	for k, v := range svc.Spec.Selector {
		if pod := dep.Spec.Template.Labels[k]; pod != v {
			t.Errorf("Service %s selects %s=%s, the pods have %q", svcName, k, v, pod)
		}
	}
	ns := byKind["Namespace/rukpak-system"]
	if ns == nil || ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("Namespace rukpak-system does not enforce the restricted Pod Security Standard")
	}
}

// TestManifestUserRolesAreLocal: every ClusterRole the release ships,
// but the manager's own, is one config.UserRoles returns, rule for rule,
// so that `rukpakctl local up` (which installs those) offers users what a
// released cluster does.
func TestManifestUserRolesAreLocal(t *testing.T) {
	data, err := Manifest(configDir(t), Image{Repository: "registry.example/rukpak", Tag: "v0.0.1", Digest: "sha256:" + strings.Repeat("cd", 32)}, "v0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	roles, err := config.UserRoles()
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]*rbacv1.ClusterRole{}
	for _, r := range roles {
		local[r.Name] = r
	}
	for _, o := range decodeAll(t, data) {
		if o.GetKind() != "ClusterRole" || o.GetName() == "rukpak-manager" {
			continue
		}
		released := &rbacv1.ClusterRole{}
		convert(t, o, released)
		l, ok := local[o.GetName()]
		if !ok {
			t.Errorf("the release ships ClusterRole %s, which config.UserRoles (and so the local cluster) lacks", o.GetName())
			continue
		}
		if !equality.Semantic.DeepEqual(l.Rules, released.Rules) {
			t.Errorf("ClusterRole %s: local rules %+v, released %+v", o.GetName(), l.Rules, released.Rules)
		}
		delete(local, o.GetName())
	}
	for name := range local {
		t.Errorf("config.UserRoles has ClusterRole %s, which the release does not ship", name)
	}
}

// convert decodes u into typed.
func convert(t *testing.T, u *unstructured.Unstructured, typed any) {
	t.Helper()
	if u == nil {
		t.Fatalf("object missing from the manifest")
	}
	data, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, typed); err != nil {
		t.Fatalf("%s %s: %v", u.GroupVersionKind(), u.GetName(), err)
	}
}

func TestManifestRefusesBrokenConfig(t *testing.T) {
	if _, err := Manifest(filepath.Join(t.TempDir(), "missing"), Image{Repository: "r"}, "v0.1.0"); err == nil {
		t.Fatal("Manifest of a missing directory succeeded")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "default", "kustomization.yaml"), "resources: [../nothing-here]\n")
	_, err := Manifest(dir, Image{Repository: "r"}, "v0.1.0")
	if err == nil || !strings.Contains(err.Error(), "kustomize") {
		t.Fatalf("Manifest of a broken kustomization: %v, want an error naming kustomize", err)
	}
}
