package refs

import (
	"fmt"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/values"
)

// Resource is the API resource of a referenced object (group "").
type Resource string

// The resources a spec can name.
const (
	// Secrets are source credentials, CA bundles and Helm values.
	Secrets Resource = "secrets"
	// ConfigMaps are configMaps sources and Helm values.
	ConfigMaps Resource = "configmaps"
)

// Limits the admission policy enforces, so that its authorization checks
// (each priced at 350,000 of the API server's CEL budget of 10,000,000
// per request) stay within that budget.
const (
	// MaxFields is how many fields of one spec may name a Secret or
	// ConfigMap, counting repeats.
	MaxFields = 64
	// MaxDistinct is how many different Secrets and ConfigMaps one spec
	// may name.
	MaxDistinct = 16
)

// Ref is one field of a spec naming a Secret or ConfigMap in rukpak-system.
type Ref struct {
	// Resource is secrets or configmaps.
	Resource Resource
	// Name is the object's name (in v1alpha2.SystemNamespace).
	Name string
	// Field is the path of the field naming it, such as
	// spec.sources[0].http.auth.secret.
	Field string
}

// Key identifies the referenced object.
func (r Ref) Key() string { return string(r.Resource) + "/" + r.Name }

// List returns every field of a spec with sources and config naming a
// Secret or ConfigMap, in spec order: for each source its image pullSecret,
// caSecret, cosign publicKeySecret and keyless trustedRootConfigMap, git
// auth secret and caSecret, http auth secret and caSecret, helmRepository
// auth secret, caSecret, pullSecret and the cosign key or trusted root or
// provenance keyring of its verify, catalog pullSecret and caSecret, configMaps;
// then spec.config.valuesFrom.
func List(sources []v1alpha2.BundleSource, config *v1alpha2.BundleConfig) []Ref {
	var out []Ref
	add := func(res Resource, ref *v1alpha2.LocalObjectReference, field string, args ...any) {
		if ref != nil && ref.Name != "" {
			out = append(out, Ref{Resource: res, Name: ref.Name, Field: fmt.Sprintf(field, args...)})
		}
	}
	for i := range sources {
		src := &sources[i]
		if img := src.Image; img != nil {
			add(Secrets, img.PullSecret, "spec.sources[%d].image.pullSecret", i)
			add(Secrets, img.CASecret, "spec.sources[%d].image.caSecret", i)
			if img.Verify != nil && img.Verify.Cosign != nil {
				add(Secrets, img.Verify.Cosign.PublicKeySecret, "spec.sources[%d].image.verify.cosign.publicKeySecret", i)
				if kl := img.Verify.Cosign.Keyless; kl != nil {
					add(ConfigMaps, &kl.TrustedRootConfigMap, "spec.sources[%d].image.verify.cosign.keyless.trustedRootConfigMap", i)
				}
			}
		}
		if git := src.Git; git != nil {
			if git.Auth != nil {
				add(Secrets, &git.Auth.Secret, "spec.sources[%d].git.auth.secret", i)
			}
			add(Secrets, git.CASecret, "spec.sources[%d].git.caSecret", i)
		}
		if h := src.HTTP; h != nil {
			if h.Auth != nil {
				add(Secrets, &h.Auth.Secret, "spec.sources[%d].http.auth.secret", i)
			}
			add(Secrets, h.CASecret, "spec.sources[%d].http.caSecret", i)
		}
		if h := src.HelmRepository; h != nil {
			if h.Auth != nil {
				add(Secrets, &h.Auth.Secret, "spec.sources[%d].helmRepository.auth.secret", i)
			}
			add(Secrets, h.CASecret, "spec.sources[%d].helmRepository.caSecret", i)
			add(Secrets, h.PullSecret, "spec.sources[%d].helmRepository.pullSecret", i)
			if h.Verify != nil && h.Verify.Cosign != nil {
				add(Secrets, h.Verify.Cosign.PublicKeySecret, "spec.sources[%d].helmRepository.verify.cosign.publicKeySecret", i)
				if kl := h.Verify.Cosign.Keyless; kl != nil {
					add(ConfigMaps, &kl.TrustedRootConfigMap, "spec.sources[%d].helmRepository.verify.cosign.keyless.trustedRootConfigMap", i)
				}
			}
			if h.Verify != nil && h.Verify.Provenance != nil {
				add(Secrets, &h.Verify.Provenance.KeyringSecret, "spec.sources[%d].helmRepository.verify.provenance.keyringSecret", i)
			}
		}
		if c := src.Catalog; c != nil {
			add(Secrets, c.PullSecret, "spec.sources[%d].catalog.pullSecret", i)
			add(Secrets, c.CASecret, "spec.sources[%d].catalog.caSecret", i)
		}
		for j := range src.ConfigMaps {
			add(ConfigMaps, &src.ConfigMaps[j].ConfigMap, "spec.sources[%d].configMaps[%d].configMap", i, j)
		}
	}
	if config != nil {
		for k, v := range config.ValuesFrom {
			res := ConfigMaps
			if v.Kind == values.KindSecret {
				res = Secrets
			}
			add(res, &v1alpha2.LocalObjectReference{Name: v.Name}, "spec.config.valuesFrom[%d]", k)
		}
	}
	return out
}

// Distinct returns the first field naming each object, in the order of
// refs.
func Distinct(refs []Ref) []Ref {
	seen := make(map[string]bool, len(refs))
	var out []Ref
	for _, r := range refs {
		if !seen[r.Key()] {
			seen[r.Key()] = true
			out = append(out, r)
		}
	}
	return out
}

// Names returns the names of the objects of res that refs name, each once.
func Names(refs []Ref, res Resource) []string {
	var out []string
	for _, r := range Distinct(refs) {
		if r.Resource == res {
			out = append(out, r.Name)
		}
	}
	return out
}
