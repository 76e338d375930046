package refs

import (
	"slices"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func ref(name string) *v1alpha2.LocalObjectReference {
	return &v1alpha2.LocalObjectReference{Name: name}
}

func TestList(t *testing.T) {
	tests := []struct {
		name    string
		sources []v1alpha2.BundleSource
		config  *v1alpha2.BundleConfig
		want    []Ref
	}{
		{name: "nothing named", sources: []v1alpha2.BundleSource{
			{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "r"}},
			{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:0"}},
		}},
		{name: "image", sources: []v1alpha2.BundleSource{
			{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "r", PullSecret: ref("pull"), CASecret: ref("ca"),
				Verify: &v1alpha2.ImageVerification{Cosign: &v1alpha2.CosignVerification{PublicKeySecret: ref("key")}}}},
			{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "r",
				Verify: &v1alpha2.ImageVerification{Cosign: &v1alpha2.CosignVerification{Keyless: &v1alpha2.KeylessVerification{
					TrustedRootConfigMap: *ref("root"), Issuer: "https://issuer.example", Subject: "me@example.com"}}}}},
		}, want: []Ref{
			{Secrets, "pull", "spec.sources[0].image.pullSecret"},
			{Secrets, "ca", "spec.sources[0].image.caSecret"},
			{Secrets, "key", "spec.sources[0].image.verify.cosign.publicKeySecret"},
			{ConfigMaps, "root", "spec.sources[1].image.verify.cosign.keyless.trustedRootConfigMap"},
		}},
		{name: "git and http", sources: []v1alpha2.BundleSource{
			{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:0"}},
			{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{Auth: &v1alpha2.GitAuth{Secret: *ref("git-auth")}, CASecret: ref("git-ca")}},
			{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{Auth: &v1alpha2.HTTPAuth{Secret: *ref("http-auth")}, CASecret: ref("http-ca")}},
		}, want: []Ref{
			{Secrets, "git-auth", "spec.sources[1].git.auth.secret"},
			{Secrets, "git-ca", "spec.sources[1].git.caSecret"},
			{Secrets, "http-auth", "spec.sources[2].http.auth.secret"},
			{Secrets, "http-ca", "spec.sources[2].http.caSecret"},
		}},
		{name: "helmRepository", sources: []v1alpha2.BundleSource{
			{Type: v1alpha2.SourceTypeHelmRepository, HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://r", Chart: "c",
				Auth: &v1alpha2.HTTPAuth{Secret: *ref("helm-auth")}, CASecret: ref("helm-ca")}},
			{Type: v1alpha2.SourceTypeHelmRepository, HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://r", Chart: "c", PullSecret: ref("oci-pull"),
				Verify: &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{PublicKeySecret: ref("oci-key")}}}},
			{Type: v1alpha2.SourceTypeHelmRepository, HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://r", Chart: "c",
				Verify: &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{Keyless: &v1alpha2.KeylessVerification{
					TrustedRootConfigMap: *ref("oci-root"), Issuer: "https://issuer.example", Subject: "me@example.com"}}}}},
			{Type: v1alpha2.SourceTypeHelmRepository, HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://r", Chart: "c",
				Verify: &v1alpha2.HelmRepositoryVerification{Provenance: &v1alpha2.ProvenanceVerification{KeyringSecret: *ref("keyring")}}}},
		}, want: []Ref{
			{Secrets, "helm-auth", "spec.sources[0].helmRepository.auth.secret"},
			{Secrets, "helm-ca", "spec.sources[0].helmRepository.caSecret"},
			{Secrets, "oci-pull", "spec.sources[1].helmRepository.pullSecret"},
			{Secrets, "oci-key", "spec.sources[1].helmRepository.verify.cosign.publicKeySecret"},
			{ConfigMaps, "oci-root", "spec.sources[2].helmRepository.verify.cosign.keyless.trustedRootConfigMap"},
			{Secrets, "keyring", "spec.sources[3].helmRepository.verify.provenance.keyringSecret"},
		}},
		{name: "catalog", sources: []v1alpha2.BundleSource{
			{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{Image: "r", Package: "p", PullSecret: ref("cat-pull"), CASecret: ref("cat-ca")}},
		}, want: []Ref{
			{Secrets, "cat-pull", "spec.sources[0].catalog.pullSecret"},
			{Secrets, "cat-ca", "spec.sources[0].catalog.caSecret"},
		}},
		{name: "configMaps and valuesFrom", sources: []v1alpha2.BundleSource{
			{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: *ref("a")}, {ConfigMap: *ref("b")}}},
		}, config: &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{
			{Kind: "Secret", Name: "s"}, {Kind: "ConfigMap", Name: "c"},
		}}, want: []Ref{
			{ConfigMaps, "a", "spec.sources[0].configMaps[0].configMap"},
			{ConfigMaps, "b", "spec.sources[0].configMaps[1].configMap"},
			{Secrets, "s", "spec.config.valuesFrom[0]"},
			{ConfigMaps, "c", "spec.config.valuesFrom[1]"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := List(tt.sources, tt.config); !slices.Equal(got, tt.want) {
				t.Fatalf("List() = %v\nwant     %v", got, tt.want)
			}
		})
	}
}

// A Secret and a ConfigMap of the same name are different objects; the
// first field naming an object is kept.
func TestDistinct(t *testing.T) {
	in := []Ref{
		{Secrets, "x", "f0"}, {ConfigMaps, "x", "f1"}, {Secrets, "x", "f2"}, {Secrets, "y", "f3"}, {ConfigMaps, "x", "f4"},
	}
	want := []Ref{{Secrets, "x", "f0"}, {ConfigMaps, "x", "f1"}, {Secrets, "y", "f3"}}
	if got := Distinct(in); !slices.Equal(got, want) {
		t.Fatalf("Distinct() = %v, want %v", got, want)
	}
	if got := Names(in, Secrets); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("Names(secrets) = %v", got)
	}
}
