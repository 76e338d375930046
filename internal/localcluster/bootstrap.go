package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha2 "github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/internal/admission"
)

// The simulated node.
const (
	// NodeName is the Node kwok simulates in a full (non-minimal) cluster.
	NodeName = "kwok-node-0"
	// NodeSelectorKey and NodeSelectorValue are a label of the Node; Pods
	// that select it are scheduled there (it is the only Node anyway).
	NodeSelectorKey   = "type"
	NodeSelectorValue = "kwok"

	kwokAnnotation = "kwok.x-k8s.io/node"
)

// newScheme returns a scheme with the built-in, apiextensions and rukpak
// types.
func newScheme() (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, rukpakv1alpha2.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// bootstrap installs what every cluster has: rukpak's CRDs (Established),
// the admission policies of config/policy (enforced), the system namespace,
// what users are offered (installForUsers) and, unless minimal, the
// simulated Node (Ready). The policies are applied
// first and waited for after the CRDs, since the API server takes a moment
// to load them.
func bootstrap(ctx context.Context, cfg *rest.Config, minimal bool) error {
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	if err := admission.ApplyPolicies(ctx, cfg); err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	crds, err := config.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := createIfMissing(ctx, c, crd); err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rukpakv1alpha2.SystemNamespace}}
	if err := createIfMissing(ctx, c, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	if err := installForUsers(ctx, c); err != nil {
		return err
	}
	if !minimal {
		if err := createIfMissing(ctx, c, kwokNode()); err != nil {
			return fmt.Errorf("creating node %s: %w", NodeName, err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	if err := admission.WaitPoliciesEnforced(ctx, cfg); err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	if !minimal {
		return waitNodeReady(ctx, c)
	}
	return nil
}

func createIfMissing(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// kwokNode is the Node kwok manages (it matches kwok's annotation
// selector). The API server keeps the status of a created Node, so capacity
// is set here; kwok adds the conditions.
func kwokNode() *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokAnnotation: "fake"},
			Labels: map[string]string{
				NodeSelectorKey:          NodeSelectorValue,
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"kubernetes.io/role":     "agent",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "kwok", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return poll(ctx, 30*time.Second, "CRD "+name+" to be Established", func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func waitNodeReady(ctx context.Context, c client.Client) error {
	return poll(ctx, 60*time.Second, "node "+NodeName+" to be Ready", func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: NodeName}, node); err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
