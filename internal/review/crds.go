package review

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// crdGK is the kind of a CustomResourceDefinition.
var crdGK = schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}

// crd is the part of a CustomResourceDefinition the review compares.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
		} `json:"versions"`
		Conversion *apiextensionsv1.CustomResourceConversion `json:"conversion"`
	} `json:"spec"`
}

// served returns the names of the versions c serves.
func (c *crd) served() []string {
	var out []string
	for _, v := range c.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// storage returns the storage version of c.
func (c *crd) storage() string {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// conversion says how c converts between versions.
func (c *crd) conversion() string {
	conv := c.Spec.Conversion
	if conv == nil || conv.Strategy == apiextensionsv1.NoneConverter || conv.Strategy == "" {
		return "no conversion"
	}
	if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return "conversion " + string(conv.Strategy)
	}
	cc := conv.Webhook.ClientConfig
	if s := cc.Service; s != nil {
		port := int32(443)
		if s.Port != nil {
			port = *s.Port
		}
		path := ""
		if s.Path != nil {
			path = *s.Path
		}
		return fmt.Sprintf("conversion webhook service %s/%s:%d%s", s.Namespace, s.Name, port, path)
	}
	if cc.URL != nil {
		return "conversion webhook URL " + withoutUserInfo(*cc.URL)
	}
	return "conversion webhook"
}

// decodeCRD returns the fields of u the review compares; nil for nil.
func decodeCRD(u *unstructured.Unstructured) (*crd, error) {
	if u == nil {
		return nil, nil
	}
	var c crd
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return nil, fmt.Errorf("decoding CustomResourceDefinition %s: %w", u.GetName(), err)
	}
	if c.Spec.Scope == "" {
		c.Spec.Scope = string(apiextensionsv1.NamespaceScoped)
	}
	return &c, nil
}

// reviewCRDs compares the CRDs of ps: a new CRD is Added; one that serves
// new versions, changes scope or conversion is Widened; one that serves
// fewer versions or changes its storage version is Changed; one the new
// revision lacks is Removed. Schema changes are in the object's paths.
func reviewCRDs(ps *pairs) ([]surfaceChange, error) {
	var out []surfaceChange
	for _, p := range ps.list {
		if p.key.groupKind() != crdGK {
			continue
		}
		before, err := decodeCRD(p.before)
		if err != nil {
			return nil, err
		}
		after, err := decodeCRD(p.after)
		if err != nil {
			return nil, err
		}
		c := surfaceChange{kind: crdGK.Kind, name: p.key.name}
		switch {
		case after == nil:
			c.change = v1alpha2.ReviewRemoved
		case before == nil:
			c.change = v1alpha2.ReviewAdded
			c.details = []string{
				fmt.Sprintf("serves %s (%s.%s), %s scope, versions %s", after.Spec.Names.Kind, after.Spec.Names.Plural, after.Spec.Group, after.Spec.Scope, strings.Join(after.served(), ",")),
				after.conversion(),
			}
		default:
			c.change, c.details = compareCRDs(before, after)
		}
		if c.change != "" {
			out = append(out, c)
		}
	}
	return out, nil
}

// compareCRDs says how a CRD changes.
func compareCRDs(before, after *crd) (v1alpha2.ReviewChange, []string) {
	var wider, other []string
	was, is := before.served(), after.served()
	if added := missing(is, was); len(added) > 0 {
		wider = append(wider, "serves new versions "+strings.Join(added, ","))
	}
	if dropped := missing(was, is); len(dropped) > 0 {
		other = append(other, "no longer serves versions "+strings.Join(dropped, ","))
	}
	if before.Spec.Scope != after.Spec.Scope {
		wider = append(wider, fmt.Sprintf("scope %s → %s", before.Spec.Scope, after.Spec.Scope))
	}
	if b, a := before.conversion(), after.conversion(); b != a {
		wider = append(wider, fmt.Sprintf("%s instead of %s", a, b))
	}
	if b, a := before.storage(), after.storage(); b != a {
		other = append(other, fmt.Sprintf("storage version %s → %s", b, a))
	}
	switch {
	case len(wider) > 0:
		return v1alpha2.ReviewWidened, append(wider, other...)
	case len(other) > 0:
		return v1alpha2.ReviewChanged, other
	}
	return "", nil
}

// missing returns the entries of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
