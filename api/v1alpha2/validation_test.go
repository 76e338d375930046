//go:build integration

package v1alpha2_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

func cmSource(name string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{
		Type:       v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: name}, Path: "manifests"}},
	}
}

func bd(name string, mutate func(*v1alpha2.BundleDeployment)) *v1alpha2.BundleDeployment {
	b := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     "example",
			Sources:              []v1alpha2.BundleSource{cmSource("example-manifests")},
		},
	}
	if mutate != nil {
		mutate(b)
	}
	return b
}

// withImage makes the BundleDeployment's source img.
func withImage(img *v1alpha2.ImageSource) func(*v1alpha2.BundleDeployment) {
	return func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: img}}
	}
}

// sha is a sha256 digest for pins.
const sha = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestBundleDeploymentCreateValidation(t *testing.T) {
	tests := []struct {
		name    string
		obj     *v1alpha2.BundleDeployment
		wantErr string // substring of the API server's message; "" means accepted
	}{
		{name: "valid", obj: bd(envtest.UniqueName("ok"), nil)},
		{
			name: "type without its member",
			obj: bd(envtest.UniqueName("nomember"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage}}
			}),
			wantErr: "source of type image must set exactly the image member",
		},
		{
			name: "a Helm repository",
			obj: bd(envtest.UniqueName("helmrepo"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.ProvisionerClassName = v1alpha2.ClassHelm
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter", Version: "4.x"}}}
			}),
		},
		{
			name: "a Helm repository that is not http",
			obj: bd(envtest.UniqueName("helmrepofile"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "file:///etc", Chart: "greeter"}}}
			}),
			wantErr: "url must be http://, https:// or oci://",
		},
		{
			name: "an OCI Helm repository with a pull secret and cosign",
			obj: bd(envtest.UniqueName("helmrepooci"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.ProvisionerClassName = v1alpha2.ClassHelm
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://registry.example/charts", Chart: "greeter", Version: "4.x",
						PullSecret: &v1alpha2.LocalObjectReference{Name: "pull"},
						Verify: &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{
							PublicKeySecret: &v1alpha2.LocalObjectReference{Name: "cosign"}}}}}}
			}),
		},
		{
			name: "an http Helm repository with a pull secret",
			obj: bd(envtest.UniqueName("helmrepopull"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter",
						PullSecret: &v1alpha2.LocalObjectReference{Name: "pull"}}}}
			}),
			wantErr: "pullSecret is for oci:// repositories",
		},
		{
			name: "an OCI Helm repository with basic auth",
			obj: bd(envtest.UniqueName("helmrepoociauth"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://registry.example/charts", Chart: "greeter",
						Auth: &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: "basic"}}}}}
			}),
		},
		{
			name: "an OCI Helm repository with basic auth and a pull secret",
			obj: bd(envtest.UniqueName("helmrepoociboth"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://registry.example/charts", Chart: "greeter",
						Auth:       &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: "basic"}},
						PullSecret: &v1alpha2.LocalObjectReference{Name: "pull"}}}}
			}),
			wantErr: "auth and pullSecret are two ways to give an oci:// repository's credentials: set one of them",
		},
		{
			name: "an http Helm repository with basic auth",
			obj: bd(envtest.UniqueName("helmrepohttpauth"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter",
						Auth: &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: "basic"}}}}}
			}),
		},
		{
			name: "an http Helm repository with cosign",
			obj: bd(envtest.UniqueName("helmrepocosign"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter",
						Verify: &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{
							PublicKeySecret: &v1alpha2.LocalObjectReference{Name: "cosign"}}}}}}
			}),
			wantErr: "verify.cosign is for oci:// repositories",
		},
		{
			name: "an http Helm repository with provenance",
			obj: bd(envtest.UniqueName("helmrepoprov"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.ProvisionerClassName = v1alpha2.ClassHelm
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter",
						Verify: &v1alpha2.HelmRepositoryVerification{Provenance: &v1alpha2.ProvenanceVerification{
							KeyringSecret: v1alpha2.LocalObjectReference{Name: "keyring"}}}}}}
			}),
		},
		{
			name: "an OCI Helm repository with provenance",
			obj: bd(envtest.UniqueName("helmrepoociprov"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://registry.example/charts", Chart: "greeter",
						Verify: &v1alpha2.HelmRepositoryVerification{Provenance: &v1alpha2.ProvenanceVerification{
							KeyringSecret: v1alpha2.LocalObjectReference{Name: "keyring"}}}}}}
			}),
			wantErr: "verify.provenance is for http(s) repositories",
		},
		{
			name: "a Helm repository verify with neither",
			obj: bd(envtest.UniqueName("helmreponone"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter",
						Verify: &v1alpha2.HelmRepositoryVerification{}}}}
			}),
			wantErr: "verify must set exactly one of cosign and provenance",
		},
		{
			name: "a Helm repository half pinned",
			obj: bd(envtest.UniqueName("helmrepohalf"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "https://charts.example/", Chart: "greeter", ResolvedVersion: "1.0.0"}}}
			}),
			wantErr: "resolvedVersion, resolvedURL and sha256 are set together",
		},
		{
			name: "a catalog",
			obj: bd(envtest.UniqueName("catalog"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.ProvisionerClassName = v1alpha2.ClassRegistry
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog,
					Catalog: &v1alpha2.CatalogSource{Image: "quay.io/example/catalog:latest", Package: "greeter",
						Channels: []string{"stable"}, Version: "1.x", UpgradeEdges: v1alpha2.UpgradeEdgesSelfCertified}}}
			}),
		},
		{
			name: "a catalog pinned",
			obj: bd(envtest.UniqueName("catalogpinned"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog,
					Catalog: &v1alpha2.CatalogSource{Image: "quay.io/example/catalog:latest", Package: "greeter",
						ResolvedBundle: "greeter.v1.0.0", ResolvedVersion: "1.0.0",
						ResolvedImage: "quay.io/example/greeter@" + sha, CatalogDigest: sha}}}
			}),
		},
		{
			name: "a catalog source without its member",
			obj: bd(envtest.UniqueName("catalognomember"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog}}
			}),
			wantErr: "source of type catalog must set exactly the catalog member",
		},
		{
			name: "a catalog half pinned",
			obj: bd(envtest.UniqueName("cataloghalf"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog,
					Catalog: &v1alpha2.CatalogSource{Image: "quay.io/example/catalog:latest", Package: "greeter", ResolvedBundle: "greeter.v1.0.0"}}}
			}),
			wantErr: "resolvedBundle, resolvedVersion, resolvedImage and catalogDigest are set together",
		},
		{
			name: "a catalog's resolved image by tag",
			obj: bd(envtest.UniqueName("catalogtag"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog,
					Catalog: &v1alpha2.CatalogSource{Image: "quay.io/example/catalog:latest", Package: "greeter",
						ResolvedBundle: "greeter.v1.0.0", ResolvedVersion: "1.0.0",
						ResolvedImage: "quay.io/example/greeter:v1.0.0", CatalogDigest: sha}}}
			}),
			wantErr: "resolvedImage must name its image by sha256 digest",
		},
		{
			name: "a catalog with an unknown upgrade edge policy",
			obj: bd(envtest.UniqueName("catalogedges"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog,
					Catalog: &v1alpha2.CatalogSource{Image: "quay.io/example/catalog:latest", Package: "greeter", UpgradeEdges: "Anything"}}}
			}),
			wantErr: "Unsupported value: \"Anything\"",
		},
		{
			name: "member of another type",
			obj: bd(envtest.UniqueName("othermember"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources[0].Image = &v1alpha2.ImageSource{Ref: "example.com/x@sha256:" + strings.Repeat("a", 64)}
			}),
			wantErr: "source of type image must set exactly the image member",
		},
		{
			name: "unknown type",
			obj: bd(envtest.UniqueName("badtype"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources[0].Type = "ftp"
			}),
			wantErr: `Unsupported value: "ftp"`,
		},
		{
			name: "no sources",
			obj: bd(envtest.UniqueName("nosrc"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = nil
			}),
			wantErr: "spec.sources: Required value",
		},
		{
			name: "two git refs",
			obj: bd(envtest.UniqueName("gitrefs"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
					Repository: "https://example.com/repo.git",
					Ref:        v1alpha2.GitRef{Branch: "main", Tag: "v1"},
				}}}
			}),
			wantErr: "exactly one of commit, tag, branch and semver must be set",
		},
		{
			name: "a git range",
			obj: bd(envtest.UniqueName("gitsemver"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
					Repository: "https://example.com/repo.git", Ref: v1alpha2.GitRef{Semver: ">=1.2 <2"},
				}}}
			}),
		},
		{
			name: "a git range and a tag",
			obj: bd(envtest.UniqueName("gitsemvertag"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
					Repository: "https://example.com/repo.git", Ref: v1alpha2.GitRef{Semver: "1.x", Tag: "v1.0.0"},
				}}}
			}),
			wantErr: "exactly one of commit, tag, branch and semver must be set",
		},
		{
			name:    "an image range",
			obj:     bd(envtest.UniqueName("imgrange"), withImage(&v1alpha2.ImageSource{Ref: "localhost:5000/team/bundle", Versions: ">=1.2 <2"})),
			wantErr: "",
		},
		{
			name:    "an image range of an oci:// repository",
			obj:     bd(envtest.UniqueName("imgrangeoci"), withImage(&v1alpha2.ImageSource{Ref: "oci://quay.io/team/chart", Versions: "1.x"})),
			wantErr: "",
		},
		{
			name: "an image range pinned",
			obj: bd(envtest.UniqueName("imgrangepin"), withImage(&v1alpha2.ImageSource{Ref: "quay.io/team/bundle", Versions: "1.x",
				Digest: "sha256:" + strings.Repeat("a", 64), ResolvedTag: "v1.4.0"})),
			wantErr: "",
		},
		{
			name:    "an image range with a tag",
			obj:     bd(envtest.UniqueName("imgrangetag"), withImage(&v1alpha2.ImageSource{Ref: "localhost:5000/team/bundle:v1", Versions: "1.x"})),
			wantErr: "with versions, ref names the repository only, without a tag or digest",
		},
		{
			name: "an image range with a digest",
			obj: bd(envtest.UniqueName("imgrangedigest"), withImage(&v1alpha2.ImageSource{
				Ref: "quay.io/team/bundle@sha256:" + strings.Repeat("a", 64), Versions: "1.x"})),
			wantErr: "with versions, ref names the repository only, without a tag or digest",
		},
		{
			name:    "an empty image range",
			obj:     bd(envtest.UniqueName("imgrangeempty"), withImage(&v1alpha2.ImageSource{Ref: "quay.io/team/bundle", Versions: ""})),
			wantErr: "",
		},
		{
			name: "a resolved tag without a range",
			obj: bd(envtest.UniqueName("imgresolvedtag"), withImage(&v1alpha2.ImageSource{Ref: "quay.io/team/bundle:v1",
				Digest: "sha256:" + strings.Repeat("a", 64), ResolvedTag: "v1"})),
			wantErr: "resolvedTag is set only with versions and digest",
		},
		{
			name: "destination escapes the tree",
			obj: bd(envtest.UniqueName("escape"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources[0].Destination = "a/../../etc"
			}),
			wantErr: "destination must be a relative path without '..'",
		},
		{
			name:    "name too long for generated Bundle names",
			obj:     bd(strings.Repeat("n", 53), nil),
			wantErr: "metadata.name must be at most 52 characters",
		},
		{
			name: "invalid install namespace",
			obj: bd(envtest.UniqueName("badns"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.InstallNamespace = "Not_A_Namespace"
			}),
			wantErr: "spec.installNamespace",
		},
		{
			name: "bad http url",
			obj: bd(envtest.UniqueName("badurl"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "ftp://x/y.tgz"}}}
			}),
			wantErr: "url must be http:// or https://",
		},
		{
			name: "cosign with a public key",
			obj: bd(envtest.UniqueName("cosignkey"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{PublicKeySecret: &v1alpha2.LocalObjectReference{Name: "key"}})}
			}),
		},
		{
			name: "cosign keyless",
			obj: bd(envtest.UniqueName("keyless"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{Keyless: keyless(nil)})}
			}),
		},
		{
			name: "cosign keyless by subjectRegExp",
			obj: bd(envtest.UniqueName("keylessre"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{Keyless: keyless(func(k *v1alpha2.KeylessVerification) {
					k.Subject, k.SubjectRegExp = "", `.*@example\.com`
				})})}
			}),
		},
		{
			name: "cosign with both a public key and keyless",
			obj: bd(envtest.UniqueName("cosignboth"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{
					PublicKeySecret: &v1alpha2.LocalObjectReference{Name: "key"}, Keyless: keyless(nil)})}
			}),
			wantErr: "cosign must set exactly one of publicKeySecret and keyless",
		},
		{
			name: "cosign with neither a public key nor keyless",
			obj: bd(envtest.UniqueName("cosignnone"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{})}
			}),
			wantErr: "cosign must set exactly one of publicKeySecret and keyless",
		},
		{
			name: "keyless with subject and subjectRegExp",
			obj: bd(envtest.UniqueName("keylessboth"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{Keyless: keyless(func(k *v1alpha2.KeylessVerification) {
					k.SubjectRegExp = ".*"
				})})}
			}),
			wantErr: "keyless must set exactly one of subject and subjectRegExp",
		},
		{
			name: "keyless without a subject",
			obj: bd(envtest.UniqueName("keylessnosub"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{Keyless: keyless(func(k *v1alpha2.KeylessVerification) {
					k.Subject = ""
				})})}
			}),
			wantErr: "keyless must set exactly one of subject and subjectRegExp",
		},
		{
			name: "keyless without an issuer",
			obj: bd(envtest.UniqueName("keylessnoiss"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{Keyless: keyless(func(k *v1alpha2.KeylessVerification) {
					k.Issuer = ""
				})})}
			}),
			wantErr: "spec.sources[0].image.verify.cosign.keyless.issuer",
		},
		{
			name: "keyless trusted root in another namespace",
			obj: bd(envtest.UniqueName("keylessns"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = []v1alpha2.BundleSource{imageSource(&v1alpha2.CosignVerification{Keyless: keyless(func(k *v1alpha2.KeylessVerification) {
					k.TrustedRootConfigMap.Namespace = "team-a"
				})})}
			}),
			wantErr: "sources read Secrets and ConfigMaps only from rukpak-system",
		},
		{
			name: "pollInterval under the minimum",
			obj: bd(envtest.UniqueName("poll1s"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.PollInterval = &metav1.Duration{Duration: time.Second}
			}),
			wantErr: "pollInterval must be at least 10s",
		},
		{
			name: "pollInterval of zero",
			obj: bd(envtest.UniqueName("poll0"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.PollInterval = &metav1.Duration{}
			}),
			wantErr: "pollInterval must be at least 10s",
		},
		{
			name: "pollInterval at the minimum",
			obj: bd(envtest.UniqueName("poll10s"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.PollInterval = &metav1.Duration{Duration: v1alpha2.MinPollInterval}
			}),
		},
		{
			name: "accepted CRD findings",
			obj: bd(envtest.UniqueName("accept"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Upgrade = &v1alpha2.UpgradePolicy{AcceptedCRDFindings: []v1alpha2.AcceptedCRDFinding{
					{CRD: "widgets.example.com", Finding: "Invalid:v1:.status.conditions[*].reason"},
					{CRD: "widgets.example.com", Finding: "Pruned:v1:.spec.size"},
				}}
			}),
		},
		{
			name: "the same accepted CRD finding twice",
			obj: bd(envtest.UniqueName("acceptdup"), func(b *v1alpha2.BundleDeployment) {
				f := v1alpha2.AcceptedCRDFinding{CRD: "widgets.example.com", Finding: "Pruned:v1:.spec.size"}
				b.Spec.Upgrade = &v1alpha2.UpgradePolicy{AcceptedCRDFindings: []v1alpha2.AcceptedCRDFinding{f, f}}
			}),
			wantErr: "Duplicate value",
		},
		{
			name: "an accepted CRD finding without its id",
			obj: bd(envtest.UniqueName("acceptnoid"), func(b *v1alpha2.BundleDeployment) {
				b.Spec.Upgrade = &v1alpha2.UpgradePolicy{AcceptedCRDFindings: []v1alpha2.AcceptedCRDFinding{{CRD: "widgets.example.com"}}}
			}),
			wantErr: "spec.upgrade.acceptedCRDFindings[0].finding",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := env.Client.Create(context.Background(), tt.obj)
			assertErr(t, err, tt.wantErr)
		})
	}
}

// imageSource is an image source verified as cosign says.
func imageSource(cosign *v1alpha2.CosignVerification) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
		Ref:    "example.com/x@sha256:" + strings.Repeat("a", 64),
		Verify: &v1alpha2.ImageVerification{Cosign: cosign},
	}}
}

// keyless is a valid keyless verification, changed by mutate.
func keyless(mutate func(*v1alpha2.KeylessVerification)) *v1alpha2.KeylessVerification {
	k := &v1alpha2.KeylessVerification{
		TrustedRootConfigMap: v1alpha2.LocalObjectReference{Name: "sigstore-root"},
		Issuer:               "https://token.actions.githubusercontent.com",
		Subject:              "release@example.com",
	}
	if mutate != nil {
		mutate(k)
	}
	return k
}

func assertErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("want accepted, got %v", err)
	case want != "" && err == nil:
		t.Fatalf("want rejected with %q, got accepted", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("want error containing %q, got %v", want, err)
	}
}

func TestBundleDeploymentUpdateValidation(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*v1alpha2.BundleDeployment)
		wantErr string
	}{
		{name: "change sources", mutate: func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = []v1alpha2.BundleSource{cmSource("v2")} }},
		{name: "pause", mutate: func(b *v1alpha2.BundleDeployment) { b.Spec.Paused = true }},
		{name: "change class", mutate: func(b *v1alpha2.BundleDeployment) { b.Spec.ProvisionerClassName = v1alpha2.ClassHelm }, wantErr: "provisionerClassName is immutable"},
		{name: "change install namespace", mutate: func(b *v1alpha2.BundleDeployment) { b.Spec.InstallNamespace = "other" }, wantErr: "installNamespace is immutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			obj := bd(envtest.UniqueName("upd"), nil)
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			tt.mutate(obj)
			assertErr(t, env.Client.Update(ctx, obj), tt.wantErr)
		})
	}
}

func TestBundleDefaultsAndImmutability(t *testing.T) {
	ctx := context.Background()
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bundle")},
		Spec: v1alpha2.BundleSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			Sources:              []v1alpha2.BundleSource{cmSource("a")},
		},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Sources = []v1alpha2.BundleSource{cmSource("b")}
	assertErr(t, env.Client.Update(ctx, b), "Bundle spec is immutable")

	long := b.DeepCopy()
	long.ObjectMeta = metav1.ObjectMeta{Name: strings.Repeat("b", 64)}
	assertErr(t, env.Client.Create(ctx, long), "metadata.name must be at most 63 characters")

	d := bd(envtest.UniqueName("defaults"), nil)
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(d.Spec.RevisionHistoryLimit, -1); got != 3 {
		t.Fatalf("revisionHistoryLimit default = %d, want 3", got)
	}
	if d.Spec.CollisionProtection != v1alpha2.CollisionProtectionPrevent {
		t.Fatalf("collisionProtection default = %q, want Prevent", d.Spec.CollisionProtection)
	}
}

// spec.unpacked, the record a revision is born with, is checked by the
// schema and never changes; the admission policy decides who may set it
// (internal/approval).
func TestBundleUnpackRecord(t *testing.T) {
	ctx := context.Background()
	digest := "sha256:" + strings.Repeat("ab", 32)
	bundle := func(u *v1alpha2.UnpackRecord) *v1alpha2.Bundle {
		return &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("record")},
			Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{cmSource("a")}, Unpacked: u},
		}
	}
	tests := []struct {
		name    string
		record  *v1alpha2.UnpackRecord
		wantErr string
	}{
		{name: "digest, URL and count", record: &v1alpha2.UnpackRecord{ContentDigest: digest, ContentURL: "https://rukpak/bundles/x", ObjectCount: 10}},
		{name: "digest only", record: &v1alpha2.UnpackRecord{ContentDigest: digest}},
		{name: "no digest", record: &v1alpha2.UnpackRecord{ObjectCount: 1}, wantErr: "spec.unpacked.contentDigest"},
		{name: "not a sha256 digest", record: &v1alpha2.UnpackRecord{ContentDigest: "sha512:" + strings.Repeat("ab", 32)}, wantErr: "spec.unpacked.contentDigest"},
		{name: "upper-case hex", record: &v1alpha2.UnpackRecord{ContentDigest: strings.ToUpper(digest)}, wantErr: "spec.unpacked.contentDigest"},
		{name: "negative count", record: &v1alpha2.UnpackRecord{ContentDigest: digest, ObjectCount: -1}, wantErr: "spec.unpacked.objectCount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErr(t, env.Client.Create(ctx, bundle(tt.record)), tt.wantErr)
		})
	}

	t.Run("never changes", func(t *testing.T) {
		b := bundle(&v1alpha2.UnpackRecord{ContentDigest: digest, ObjectCount: 1})
		if err := env.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		b.Spec.Unpacked.ObjectCount = 2
		assertErr(t, env.Client.Update(ctx, b), "Bundle spec is immutable")
		b.Spec.Unpacked = nil
		assertErr(t, env.Client.Update(ctx, b), "Bundle spec is immutable")

		without := bundle(nil)
		if err := env.Client.Create(ctx, without); err != nil {
			t.Fatal(err)
		}
		without.Spec.Unpacked = &v1alpha2.UnpackRecord{ContentDigest: digest}
		assertErr(t, env.Client.Update(ctx, without), "Bundle spec is immutable")
	})
}

func TestProvisionerClassValidation(t *testing.T) {
	ctx := context.Background()
	pc := &v1alpha2.ProvisionerClass{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("class")},
		Spec:       v1alpha2.ProvisionerClassSpec{ControllerName: "example.com/provisioner"},
	}
	if err := env.Client.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	pc.Spec.ControllerName = "example.com/other"
	assertErr(t, env.Client.Update(ctx, pc), "controllerName is immutable")

	bad := &v1alpha2.ProvisionerClass{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("class")},
		Spec:       v1alpha2.ProvisionerClassSpec{ControllerName: "no-domain"},
	}
	assertErr(t, env.Client.Create(ctx, bad), "spec.controllerName")
}
