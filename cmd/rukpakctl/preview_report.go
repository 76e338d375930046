package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/permissions"
)

// report is what preview found out about one BundleDeployment.
type report struct {
	bd      *v1alpha2.BundleDeployment
	objects int
	// required are the rules the objects need.
	required []permissions.Rule
	// subject is the install identity; nil when the BundleDeployment
	// installs as the manager.
	subject             *permissions.Subject
	saNamespace, saName string
	// checked says missing is known.
	checked bool
	missing []permissions.Rule
}

// check asks the cluster which rules the subject lacks. Without the
// permission to create SubjectAccessReviews it notes so on stderr and
// leaves the report unchecked.
func (r *report) check(ctx context.Context, cl *cluster, stderr io.Writer, targets []permissions.Target) error {
	checker := &permissions.Checker{Reviews: cl.clientset.AuthorizationV1().SubjectAccessReviews()}
	missing, err := checker.Missing(ctx, *r.subject, targets)
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(stderr, "note: not checked: you may not create subjectaccessreviews (authorization.k8s.io), which checking %s takes: %v\n", r.subject, err)
		return nil
	}
	if err != nil {
		return err
	}
	r.checked, r.missing = true, missing
	return nil
}

// printTable writes the required rules, OK or MISSING when checked, and the
// RBAC objects granting what is missing.
func (r *report) printTable(w io.Writer) error {
	name := r.bd.Name
	if r.subject == nil {
		fmt.Fprintf(w, "BundleDeployment %s has no spec.serviceAccount: it installs as the manager (cluster-admin mode).\n", name)
		fmt.Fprintf(w, "A ServiceAccount installing its %d object(s) would need %d rule(s), each with verbs %s:\n", r.objects, len(r.required), strings.Join(permissions.Verbs, ", "))
	} else {
		fmt.Fprintf(w, "BundleDeployment %s installs its %d object(s) as %s; it needs %d rule(s), each with verbs %s:\n",
			name, r.objects, r.subject, len(r.required), strings.Join(permissions.Verbs, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "NAMESPACE\tAPIGROUP\tRESOURCES"
	if r.checked {
		header += "\tSTATUS"
	}
	fmt.Fprintln(tw, header)
	lacks := lackedVerbs(r.missing)
	for _, rule := range r.required {
		ns := rule.Namespace
		if ns == "" {
			ns = "(cluster-wide)"
		}
		line := fmt.Sprintf("%s\t%s\t%s", ns, groupName(rule.APIGroups[0]), strings.Join(rule.Resources, ","))
		if r.checked {
			line += "\t" + ruleStatus(rule, lacks)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	switch {
	case r.subject == nil:
		return nil
	case !r.checked:
		_, err := fmt.Fprintf(w, "Not checked against the cluster; preview with a cluster to see what %s lacks.\n", r.subject)
		return err
	case len(r.missing) == 0:
		_, err := fmt.Fprintf(w, "%s has every permission BundleDeployment %s needs.\n", r.subject, name)
		return err
	}
	fmt.Fprintf(w, "\n%s lacks %d rule(s). Grant with:\n", r.subject, len(r.missing))
	return r.printObjects(w, r.missing)
}

// printRoles writes only the RBAC objects granting the missing rules, or
// every required rule with all.
func (r *report) printRoles(w io.Writer, all bool) error {
	if r.subject == nil {
		return fmt.Errorf("BundleDeployment %s has no spec.serviceAccount to grant rules to; name one with --service-account", r.bd.Name)
	}
	if all {
		return r.printObjects(w, r.required)
	}
	if !r.checked {
		return fmt.Errorf("what %s lacks could not be checked; use --all for Roles granting every required rule", r.subject)
	}
	return r.printObjects(w, r.missing)
}

// printObjects writes the Roles, ClusterRoles and bindings granting rules
// as a YAML stream.
func (r *report) printObjects(w io.Writer, rules []permissions.Rule) error {
	var objs []*unstructured.Unstructured
	for _, obj := range permissions.Roles(r.bd.Name+"-installer", r.saNamespace, r.saName, rules) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("converting %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		objs = append(objs, &unstructured.Unstructured{Object: u})
	}
	return printObjects(w, objs)
}

// lackedVerbs indexes missing rules: namespace, group and resource to the
// verbs lacked.
func lackedVerbs(missing []permissions.Rule) map[[3]string][]string {
	out := map[[3]string][]string{}
	for _, rule := range missing {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				k := [3]string{rule.Namespace, g, res}
				out[k] = append(out[k], rule.Verbs...)
			}
		}
	}
	return out
}

// ruleStatus is OK when nothing of rule is lacked, MISSING when all of it
// is, else MISSING with what is lacked per resource.
func ruleStatus(rule permissions.Rule, lacks map[[3]string][]string) string {
	var parts []string
	all := true
	for _, res := range rule.Resources {
		verbs := lacks[[3]string{rule.Namespace, rule.APIGroups[0], res}]
		if len(verbs) == 0 {
			all = false
			continue
		}
		verbs = slices.Compact(slices.Sorted(slices.Values(verbs)))
		if len(verbs) < len(rule.Verbs) {
			all = false
		}
		parts = append(parts, res+": "+strings.Join(verbs, ","))
	}
	switch {
	case len(parts) == 0:
		return "OK"
	case all:
		return "MISSING"
	}
	return "MISSING " + strings.Join(parts, "; ")
}

// groupName shows the core API group as "" as RBAC rules write it.
func groupName(g string) string {
	if g == "" {
		return `""`
	}
	return g
}
