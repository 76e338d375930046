package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/config"
)

// Names of the policies of config/policy.
const (
	// MutatingPolicyName records the requester of a BundleDeployment or a
	// Bundle in the requested-by annotations.
	MutatingPolicyName = "rukpak-requested-by"
	// FinalizerPolicyName gives every new BundleDeployment the cleanup
	// finalizer, so the manager does not have to add it with an update.
	FinalizerPolicyName = "rukpak-cleanup-finalizer"
	// ValidatingPolicyName refuses requests whose user may not impersonate
	// the install identity, use the class, or use a Secret or ConfigMap
	// the spec names (for Bundles: the class, Secrets and ConfigMaps,
	// unless the manager writes it).
	// It also refuses changes of owner references, finalizers and the
	// retry annotation by users who may not create the object as it
	// stands, and of rukpak's finalizers by anyone but the manager.
	ValidatingPolicyName = "rukpak-install-authorization"
	// ApprovedByPolicyName records who approved a revision in the
	// approved-by annotations.
	ApprovedByPolicyName = "rukpak-approved-by"
	// ApprovalPolicyName refuses changes of the approval annotations by
	// users who may not approve the BundleDeployment's revisions.
	ApprovalPolicyName = "rukpak-approval-authorization"
	// LoweringPolicyName refuses lowering spec.upgrade.approval by users
	// who may not approve the BundleDeployment's revisions.
	LoweringPolicyName = "rukpak-approval-lowering"
)

// The wait for the policies to be enforced.
const (
	// EnforcedTimeout bounds how long WaitPoliciesEnforced waits.
	EnforcedTimeout = 30 * time.Second
	pollInterval    = 50 * time.Millisecond
	// probeName names the temporary ClusterRole and ClusterRoleBinding
	// that let probeUser create BundleDeployments while
	// WaitPoliciesEnforced waits; they are deleted before it returns.
	probeName = "rukpak-policy-probe"
	probeUser = "rukpak-policy-probe"
	// fieldOwner applies the policies.
	fieldOwner = "rukpak-bootstrap"
)

// InstallPolicies applies the admission policies of config/policy
// (ApplyPolicies) and waits until the API server enforces them
// (WaitPoliciesEnforced).
func InstallPolicies(ctx context.Context, cfg *rest.Config) error {
	if err := ApplyPolicies(ctx, cfg); err != nil {
		return err
	}
	return WaitPoliciesEnforced(ctx, cfg)
}

// ApplyPolicies applies the admission policies of config/policy with
// server-side apply (field manager rukpak-bootstrap, forced) as the user of
// cfg, an admin. The API server enforces them some time later; callers that
// have other set-up to do (installing CRDs) do it before
// WaitPoliciesEnforced, so that the two overlap.
func ApplyPolicies(ctx context.Context, cfg *rest.Config) error {
	admin, err := newClient(cfg)
	if err != nil {
		return err
	}
	policies, err := config.Policies()
	if err != nil {
		return err
	}
	for _, p := range policies {
		if err := admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(p), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", p.GetKind(), p.GetName(), err)
		}
	}
	return nil
}

// WaitPoliciesEnforced waits, at most EnforcedTimeout, until the API server
// enforces the policies ApplyPolicies wrote; it loads policies and bindings
// some time (about a second or two) after they are written. cfg's user must
// be an admin, and rukpak's CRDs must be installed.
//
// Enforcement is observed with server-side dry-run creates of a probe
// BundleDeployment, which store nothing, every 50ms: one as cfg's user must
// come back with the requested-by annotation and the cleanup finalizer (the
// mutating policies are active), and one impersonating a user that may create BundleDeployments
// but impersonate no one must be refused by rukpak-install-authorization
// (the validating policy is active). That user's permission is granted by a
// temporary ClusterRole and ClusterRoleBinding named rukpak-policy-probe,
// deleted before WaitPoliciesEnforced returns.
func WaitPoliciesEnforced(ctx context.Context, cfg *rest.Config) error {
	admin, err := newClient(cfg)
	if err != nil {
		return err
	}
	probeCfg := rest.CopyConfig(cfg)
	probeCfg.Impersonate = rest.ImpersonationConfig{UserName: probeUser}
	probe, err := newClient(probeCfg)
	if err != nil {
		return err
	}
	rbac := probeRBAC()
	for _, obj := range rbac {
		if err := admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating probe %T %s: %w", obj, obj.GetName(), err)
		}
	}
	defer func() {
		// The caller's ctx may be done; the clean-up still runs.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, obj := range rbac {
			_ = admin.Delete(ctx, obj)
		}
	}()
	return waitEnforced(ctx, admin, probe)
}

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return c, nil
}

// waitEnforced polls both dry-run probes until each has seen its policy
// enforced once.
func waitEnforced(ctx context.Context, admin, probe client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, EnforcedTimeout)
	defer cancel()
	var mutated, validated bool
	var last error
	for {
		if !mutated {
			mutated, last = mutatedProbe(ctx, admin)
		}
		if mutated && !validated {
			validated, last = validatedProbe(ctx, probe)
		}
		if mutated && validated {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("admission policies %s, %s and %s not enforced within %s: %w", MutatingPolicyName, FinalizerPolicyName, ValidatingPolicyName, EnforcedTimeout, last)
		case <-time.After(pollInterval):
		}
	}
}

// mutatedProbe reports whether a dry-run create as the admin comes back
// with the requested-by annotation and the cleanup finalizer. Until the
// mutating policies are loaded the create either succeeds without them or,
// if the validating policy is loaded first, is refused for lacking the
// annotation.
func mutatedProbe(ctx context.Context, admin client.Client) (bool, error) {
	bd := probeBundleDeployment()
	if err := admin.Create(ctx, bd, client.DryRunAll); err != nil {
		return false, fmt.Errorf("dry-run create as the admin: %w", err)
	}
	if bd.Annotations[v1alpha2.AnnotationRequestedBy] == "" {
		return false, fmt.Errorf("dry-run create as the admin: no %s annotation yet", v1alpha2.AnnotationRequestedBy)
	}
	if !slices.Contains(bd.Finalizers, v1alpha2.FinalizerCleanup) {
		return false, fmt.Errorf("dry-run create as the admin: no finalizer %s yet (%s)", v1alpha2.FinalizerCleanup, FinalizerPolicyName)
	}
	return true, nil
}

// validatedProbe reports whether a dry-run create as the probe user is
// refused by the validating policy (rather than by RBAC, while the probe's
// ClusterRoleBinding is not yet in effect, or not at all).
func validatedProbe(ctx context.Context, probe client.Client) (bool, error) {
	err := probe.Create(ctx, probeBundleDeployment(), client.DryRunAll)
	if err == nil {
		return false, errors.New("dry-run create as an unprivileged user was admitted")
	}
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), ValidatingPolicyName) {
		return true, nil
	}
	return false, fmt.Errorf("dry-run create as an unprivileged user: %w", err)
}

// probeBundleDeployment is never stored: it is only created with dry-run.
// It names no serviceAccount, so the probe user would need to impersonate
// the manager.
func probeBundleDeployment() *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{GenerateName: probeName + "-"},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     v1alpha2.SystemNamespace,
			Sources: []v1alpha2.BundleSource{{
				Type:       v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: probeName}}},
			}},
		},
	}
}

// probeRBAC lets probeUser create BundleDeployments, and nothing else.
func probeRBAC() []client.Object {
	return []client.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: probeName},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{v1alpha2.GroupVersion.Group},
				Resources: []string{"bundledeployments"},
				Verbs:     []string{"create"},
			}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: probeName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: probeName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: probeUser}},
		},
	}
}
