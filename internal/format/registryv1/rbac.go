package registryv1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Name limits of generated RBAC objects.
const (
	// maxNameLength is the longest generated name: short enough for a
	// label value, not only for an RBAC name.
	maxNameLength = 63
	// hashLength is how many hex digits of the hash a name ends with.
	hashLength = 10
	// maxServiceAccountPart is the most of the ServiceAccount name a
	// generated name keeps when the CSV name is long.
	maxServiceAccountPart = 20
)

// rbacAPIVersion is the apiVersion of generated RBAC objects.
const rbacAPIVersion = "rbac.authorization.k8s.io/v1"

// generated holds the objects made from the CSV, by kind.
type generated struct {
	serviceAccounts     []*unstructured.Unstructured
	clusterRoles        []*unstructured.Unstructured
	clusterRoleBindings []*unstructured.Unstructured
	roles               []*unstructured.Unstructured
	roleBindings        []*unstructured.Unstructured
	deployments         []*unstructured.Unstructured
	// services are the Services the API server calls and their
	// certificate Secrets, applied before the Deployments that mount them.
	services []*unstructured.Unstructured
	// callers are webhook configurations and APIServices, applied after
	// the Deployments that serve them.
	callers []*unstructured.Unstructured
}

// rbacBuilder turns the CSV's permissions into roles and bindings.
type rbacBuilder struct {
	csvName          string
	installNamespace string
	out              *generated
	// seen holds "kind/namespace/name" of the roles made, so that the same
	// rules for the same ServiceAccount make one role.
	seen map[string]bool
}

// addPermissions adds the roles and bindings of perms: ClusterRoles when
// cluster is set or the operator watches all namespaces, otherwise a Role
// in each target namespace.
func (b *rbacBuilder) addPermissions(perms []permission, cluster bool, targets []string) error {
	for _, p := range perms {
		rules, err := decodeRules(p.Rules)
		if err != nil {
			return invalidCSV(b.csvName, "rules of ServiceAccount %s: %v", p.ServiceAccountName, err)
		}
		if cluster || slices.Equal(targets, []string{""}) {
			b.add("ClusterRole", "", p.ServiceAccountName, rules)
			continue
		}
		for _, ns := range targets {
			b.add("Role", ns, p.ServiceAccountName, rules)
		}
	}
	return nil
}

// add adds a role of kind in namespace with rules, and its binding to the
// ServiceAccount sa of the install namespace.
func (b *rbacBuilder) add(kind, namespace, sa string, rules []any) {
	name := roleName(b.csvName, sa, kind, rules)
	key := kind + "/" + namespace + "/" + name
	if b.seen[key] {
		return
	}
	b.seen[key] = true
	role := newObject(rbacAPIVersion, kind, namespace, name)
	role.Object["rules"] = rules
	binding := newObject(rbacAPIVersion, kind+"Binding", namespace, name)
	binding.Object["roleRef"] = map[string]any{
		"apiGroup": "rbac.authorization.k8s.io",
		"kind":     kind,
		"name":     name,
	}
	binding.Object["subjects"] = []any{map[string]any{
		"kind":      "ServiceAccount",
		"name":      sa,
		"namespace": b.installNamespace,
	}}
	if kind == "ClusterRole" {
		b.out.clusterRoles = append(b.out.clusterRoles, role)
		b.out.clusterRoleBindings = append(b.out.clusterRoleBindings, binding)
		return
	}
	b.out.roles = append(b.out.roles, role)
	b.out.roleBindings = append(b.out.roleBindings, binding)
}

// decodeRules decodes the rules as written; none is an empty list.
func decodeRules(raw json.RawMessage) ([]any, error) {
	rules := []any{}
	if len(raw) == 0 {
		return rules, nil
	}
	if err := utiljson.Unmarshal(raw, &rules); err != nil {
		return nil, err
	}
	if rules == nil {
		rules = []any{}
	}
	return rules, nil
}

// roleName returns the name of the role of kind granting rules to the
// ServiceAccount sa of the CSV named csvName: "<csv>-<sa>-<hash>", cut to
// maxNameLength. It depends only on its arguments, so it is the same on
// every run, and the hash of all of them keeps it unique.
func roleName(csvName, sa, kind string, rules []any) string {
	encoded, err := json.Marshal(rules)
	if err != nil {
		// Decoded JSON always encodes; keep the name stable regardless.
		encoded = fmt.Appendf(nil, "%v", rules)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(csvName), []byte(sa), []byte(kind), encoded} {
		h.Write(part)
		h.Write([]byte{0})
	}
	hash := hex.EncodeToString(h.Sum(nil))[:hashLength]
	budget := maxNameLength - 1 - hashLength
	if len(csvName)+1+len(sa) > budget {
		sa = trimName(sa, maxServiceAccountPart)
		csvName = trimName(csvName, budget-1-len(sa))
	}
	return csvName + "-" + sa + "-" + hash
}

// trimName cuts name, a DNS subdomain, to at most n bytes that end with a
// letter or digit.
func trimName(name string, n int) string {
	if len(name) > n {
		name = name[:n]
	}
	return strings.TrimRight(name, "-.")
}

// newObject returns an object of apiVersion and kind named name, in
// namespace unless it is "".
func newObject(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   meta,
	}}
}

// serviceAccounts returns the ServiceAccounts the CSV's permissions and
// deployments use, sorted by name, except "default" and those in existing
// (names of ServiceAccounts the manifests define).
func serviceAccounts(csv *clusterServiceVersion, installNamespace string, existing map[string]bool) []*unstructured.Unstructured {
	names := map[string]bool{}
	spec := csv.Spec.Install.Spec
	for _, p := range slices.Concat(spec.Permissions, spec.ClusterPermissions) {
		names[p.ServiceAccountName] = true
	}
	for _, d := range spec.Deployments {
		names[d.serviceAccount] = true
	}
	var out []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name == "" || name == "default" || existing[name] {
			continue
		}
		out = append(out, newObject("v1", "ServiceAccount", installNamespace, name))
	}
	return out
}
