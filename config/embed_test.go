package config

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestPolicies checks that config/policy decodes into the six objects, in
// order, that every embedded file is listed, and that each decodes strictly
// into its typed API object (no misspelt fields).
func TestPolicies(t *testing.T) {
	objs, err := Policies()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, name string }{
		{"MutatingAdmissionPolicy", "rukpak-requested-by"},
		{"MutatingAdmissionPolicyBinding", "rukpak-requested-by"},
		{"ValidatingAdmissionPolicy", "rukpak-install-authorization"},
		{"ValidatingAdmissionPolicyBinding", "rukpak-install-authorization"},
		{"MutatingAdmissionPolicy", "rukpak-cleanup-finalizer"},
		{"MutatingAdmissionPolicyBinding", "rukpak-cleanup-finalizer"},
		{"MutatingAdmissionPolicy", "rukpak-approved-by"},
		{"MutatingAdmissionPolicyBinding", "rukpak-approved-by"},
		{"ValidatingAdmissionPolicy", "rukpak-approval-authorization"},
		{"ValidatingAdmissionPolicyBinding", "rukpak-approval-authorization"},
		{"ValidatingAdmissionPolicy", "rukpak-approval-lowering"},
		{"ValidatingAdmissionPolicyBinding", "rukpak-approval-lowering"},
	}
	if len(objs) != len(want) {
		t.Fatalf("got %d objects, want %d", len(objs), len(want))
	}
	for i, w := range want {
		if objs[i].GetKind() != w.kind || objs[i].GetName() != w.name {
			t.Errorf("object %d = %s %s, want %s %s", i, objs[i].GetKind(), objs[i].GetName(), w.kind, w.name)
		}
		if objs[i].GetAPIVersion() != "admissionregistration.k8s.io/v1" {
			t.Errorf("%s apiVersion = %s", w.kind, objs[i].GetAPIVersion())
		}
	}

	files, err := fs.Glob(policyFS, "policy/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"policy/kustomization.yaml": true}
	for _, f := range policyFiles {
		listed[f] = true
	}
	for _, f := range files {
		if !listed[f] {
			t.Errorf("%s is embedded but not listed in policyFiles", f)
		}
	}

	var kustomization struct {
		Resources []string `json:"resources"`
	}
	data, err := policyFS.ReadFile("policy/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatal(err)
	}
	for i, f := range policyFiles {
		if i >= len(kustomization.Resources) || "policy/"+kustomization.Resources[i] != f {
			t.Errorf("policy/kustomization.yaml resources = %v, want the files of policyFiles in order", kustomization.Resources)
			break
		}
	}

	typed := []runtime.Object{
		&admissionregistrationv1.MutatingAdmissionPolicy{},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		&admissionregistrationv1.MutatingAdmissionPolicy{},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{},
		&admissionregistrationv1.MutatingAdmissionPolicy{},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
	}
	for i, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, typed[i]); err != nil {
			t.Errorf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	vap := typed[2].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	mp := typed[0].(*admissionregistrationv1.MutatingAdmissionPolicy)
	// The approval policies validate exactly the requests the approval
	// mutation matches.
	amp, avap := typed[6].(*admissionregistrationv1.MutatingAdmissionPolicy), typed[8].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if len(amp.Spec.MatchConditions) != 1 || len(avap.Spec.MatchConditions) != 1 ||
		amp.Spec.MatchConditions[0].Expression != avap.Spec.MatchConditions[0].Expression {
		t.Error("rukpak-approved-by and rukpak-approval-authorization must have the same one matchCondition")
	}
	// Neither matches the manager's own requests on Bundles (the same
	// first matchCondition). Every other request rukpak-requested-by
	// mutates is validated (a forged requester is refused); the
	// validating policy also takes changes of owner references,
	// finalizers and the retry annotation, which are OR-ed onto the
	// mutating policy's second condition.
	if len(vap.Spec.MatchConditions) != 2 || len(mp.Spec.MatchConditions) != 2 {
		t.Fatal("rukpak-requested-by and rukpak-install-authorization must have two matchConditions each")
	}
	if vap.Spec.MatchConditions[0] != mp.Spec.MatchConditions[0] {
		t.Errorf("the first matchConditions differ: %+v and %+v", vap.Spec.MatchConditions[0], mp.Spec.MatchConditions[0])
	}
	if skip := mp.Spec.MatchConditions[0].Expression; !strings.Contains(skip, "'bundles'") ||
		!strings.Contains(skip, "'system:serviceaccount:rukpak-system:rukpak-manager'") {
		t.Errorf("the first matchCondition %q should leave out the manager's requests on bundles", skip)
	}
	mutated, validated := mp.Spec.MatchConditions[1].Expression, vap.Spec.MatchConditions[1].Expression
	if !strings.HasPrefix(validated, mutated+" ||") {
		t.Errorf("the validating policy's matchCondition %q does not start with the mutating policy's %q, OR-ed with more", validated, mutated)
	}
	for _, field := range []string{"ownerReferences", "finalizers", "core.rukpak.io/retry"} {
		if !strings.Contains(strings.TrimPrefix(validated, mutated), field) {
			t.Errorf("the validating policy's matchCondition does not take changes of %s", field)
		}
	}
	lowering := typed[10].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	for _, p := range []*admissionregistrationv1.FailurePolicyType{vap.Spec.FailurePolicy, mp.Spec.FailurePolicy, lowering.Spec.FailurePolicy} {
		if p == nil || *p != admissionregistrationv1.Fail {
			t.Error("policies must fail closed (failurePolicy: Fail)")
		}
	}
}

// TestShardByNamespacePolicy checks that config/shards/default-by-namespace
// decodes strictly into its policy and binding, in the order of its
// kustomization, that every embedded file is listed, that it acts only on
// creates, and that config/shards (the release's rukpak-shards.yaml) does
// not include it.
func TestShardByNamespacePolicy(t *testing.T) {
	objs, err := ShardByNamespacePolicy()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("got %d objects, want 2", len(objs))
	}
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	for i, typed := range []runtime.Object{policy, binding} {
		data, err := yaml.Marshal(objs[i].Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, typed); err != nil {
			t.Errorf("%s %s: %v", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
	if policy.Kind != "MutatingAdmissionPolicy" || binding.Kind != "MutatingAdmissionPolicyBinding" ||
		policy.Name != "rukpak-shard-by-namespace" || binding.Spec.PolicyName != policy.Name {
		t.Errorf("got %s %s and %s bound to %s", policy.Kind, policy.Name, binding.Kind, binding.Spec.PolicyName)
	}
	for _, rule := range policy.Spec.MatchConstraints.ResourceRules {
		if ops := rule.Operations; len(ops) != 1 || ops[0] != admissionregistrationv1.Create {
			t.Errorf("operations %v, want only CREATE: moving shards is a deliberate label change", ops)
		}
	}
	if p := binding.Spec.ParamRef; p == nil || p.Name != "rukpak-shard-by-namespace" || p.Namespace != "rukpak-system" ||
		p.ParameterNotFoundAction == nil || *p.ParameterNotFoundAction != admissionregistrationv1.AllowAction {
		t.Errorf("paramRef %+v, want rukpak-system/rukpak-shard-by-namespace, allowed when missing", p)
	}

	files, err := fs.Glob(shardDefaultFS, "shards/default-by-namespace/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"shards/default-by-namespace/kustomization.yaml": true}
	for _, f := range shardDefaultFiles {
		listed[f] = true
	}
	for _, f := range files {
		if !listed[f] {
			t.Errorf("%s is embedded but not listed in shardDefaultFiles", f)
		}
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	data, err := shardDefaultFS.ReadFile("shards/default-by-namespace/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range shardDefaultFiles {
		want = append(want, path.Base(f))
	}
	if !slices.Equal(kustomization.Resources, want) {
		t.Errorf("kustomization resources %v, want %v", kustomization.Resources, want)
	}

	data, err = os.ReadFile("shards/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kustomization.Resources = nil
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(kustomization.Resources, "default-by-namespace") {
		t.Error("config/shards includes default-by-namespace: it is optional, applied on its own")
	}
}
