package crdwebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/crdsafety"
)

// Handler is the admission handler of direct CRD updates.
type Handler struct {
	// Reader reads BundleDeployments and lists custom resources; it should
	// read the API server directly, not a cache.
	Reader client.Reader
	// TrustedUsers are user names whose updates are allowed unchecked.
	TrustedUsers []string
}

var _ admission.Handler = (*Handler)(nil)

// Handle decides one admission request; see the package documentation.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("not an update")
	}
	if slices.Contains(h.TrustedUsers, req.UserInfo.Username) {
		return admission.Allowed("trusted user")
	}
	oldCRD, newCRD, err := decode(req)
	if err != nil {
		return admission.Denied(fmt.Sprintf("cannot check CRD upgrade safety: %v", err))
	}
	labels := oldCRD.GetLabels()
	bdName := labels[v1alpha2.LabelOwnerName]
	if labels[v1alpha2.LabelOwnerKind] != "BundleDeployment" || bdName == "" {
		return admission.Allowed("not managed by a BundleDeployment")
	}
	if equality.Semantic.DeepEqual(oldCRD.Spec, newCRD.Spec) {
		return admission.Allowed("spec unchanged")
	}
	bd := &v1alpha2.BundleDeployment{}
	if err := h.Reader.Get(ctx, client.ObjectKey{Name: bdName}, bd); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Allowed("BundleDeployment " + bdName + " no longer exists")
		}
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("getting BundleDeployment %s: %w", bdName, err))
	}
	if bd.Spec.Upgrade != nil && bd.Spec.Upgrade.CRDUpgradeSafety == v1alpha2.CRDUpgradeSafetyNone {
		return admission.Allowed("BundleDeployment " + bdName + " sets crdUpgradeSafety: None")
	}
	opts := crdsafety.DefaultOptions()
	opts.Accepted = bd.Spec.Upgrade.AcceptedFindings(newCRD.Name)
	res, err := crdsafety.Check(ctx, h.Reader, oldCRD, newCRD, opts)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !res.Safe() {
		return admission.Denied(fmt.Sprintf("unsafe CRD upgrade: %s (managed by BundleDeployment %s; change the bundle instead, "+
			"accept each finding in its spec.upgrade.acceptedCRDFindings, or set its spec.upgrade.crdUpgradeSafety to None)", res.Message(), bdName))
	}
	return admission.Allowed("")
}

// decode reads the old and new CRD of an update request.
func decode(req admission.Request) (oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition, err error) {
	oldCRD, newCRD = &apiextensionsv1.CustomResourceDefinition{}, &apiextensionsv1.CustomResourceDefinition{}
	if err := decodeCRD(req.OldObject.Raw, oldCRD); err != nil {
		return nil, nil, fmt.Errorf("decoding old object: %w", err)
	}
	if err := decodeCRD(req.Object.Raw, newCRD); err != nil {
		return nil, nil, fmt.Errorf("decoding new object: %w", err)
	}
	return oldCRD, newCRD, nil
}

func decodeCRD(raw []byte, into *apiextensionsv1.CustomResourceDefinition) error {
	if len(raw) == 0 {
		return fmt.Errorf("object is empty")
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return err
	}
	if into.Kind != "CustomResourceDefinition" {
		return fmt.Errorf("kind is %q, want CustomResourceDefinition", into.Kind)
	}
	return nil
}
