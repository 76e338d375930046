//go:build integration

package approval_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/internal/refs"
	"github.com/rukpak/rukpak/pkg/envtest"
)

const digest0 = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// reference is one kind of field naming a Secret or ConfigMap: the spec
// (sources and config) naming name, the resource it names, and the field.
type reference struct {
	kind     string
	resource string
	field    string
	spec     func(name string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig)
}

func secretRef(name string) *v1alpha2.LocalObjectReference {
	return &v1alpha2.LocalObjectReference{Name: name}
}

func image(mutate func(*v1alpha2.ImageSource)) []v1alpha2.BundleSource {
	img := &v1alpha2.ImageSource{Ref: "registry.example/app@" + digest0}
	mutate(img)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: img}}
}

func git(mutate func(*v1alpha2.GitSource)) []v1alpha2.BundleSource {
	g := &v1alpha2.GitSource{Repository: "https://git.example/app.git", Ref: v1alpha2.GitRef{Branch: "main"}}
	mutate(g)
	// An upload first, so that the field's index is 1: uploads name
	// nothing.
	return []v1alpha2.BundleSource{
		{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: digest0}},
		{Type: v1alpha2.SourceTypeGit, Git: g},
	}
}

func httpSrc(mutate func(*v1alpha2.HTTPSource)) []v1alpha2.BundleSource {
	h := &v1alpha2.HTTPSource{URL: "https://files.example/app.tar.gz"}
	mutate(h)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP, HTTP: h}}
}

func helmRepo(url string, mutate func(*v1alpha2.HelmRepositorySource)) []v1alpha2.BundleSource {
	h := &v1alpha2.HelmRepositorySource{URL: url, Chart: "app", Version: "1.x"}
	mutate(h)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository, HelmRepository: h}}
}

func catalogSrc(mutate func(*v1alpha2.CatalogSource)) []v1alpha2.BundleSource {
	c := &v1alpha2.CatalogSource{Image: "registry.example/catalog:latest", Package: "app"}
	mutate(c)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog, Catalog: c}}
}

// upload is a source naming nothing, for specs whose reference is in
// config.
var upload = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: digest0}}}

// references are every kind of field that names a Secret or ConfigMap.
var references = []reference{
	{"image pullSecret", "secrets", "spec.sources[0].image.pullSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return image(func(i *v1alpha2.ImageSource) { i.PullSecret = secretRef(n) }), nil
	}},
	{"image caSecret", "secrets", "spec.sources[0].image.caSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return image(func(i *v1alpha2.ImageSource) { i.CASecret = secretRef(n) }), nil
	}},
	{"image cosign publicKeySecret", "secrets", "spec.sources[0].image.verify.cosign.publicKeySecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return image(func(i *v1alpha2.ImageSource) {
			i.Verify = &v1alpha2.ImageVerification{Cosign: &v1alpha2.CosignVerification{PublicKeySecret: secretRef(n)}}
		}), nil
	}},
	{"git auth secret", "secrets", "spec.sources[1].git.auth.secret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return git(func(g *v1alpha2.GitSource) { g.Auth = &v1alpha2.GitAuth{Secret: *secretRef(n)} }), nil
	}},
	{"git caSecret", "secrets", "spec.sources[1].git.caSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return git(func(g *v1alpha2.GitSource) { g.CASecret = secretRef(n) }), nil
	}},
	{"http auth secret", "secrets", "spec.sources[0].http.auth.secret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return httpSrc(func(h *v1alpha2.HTTPSource) { h.Auth = &v1alpha2.HTTPAuth{Secret: *secretRef(n)} }), nil
	}},
	{"http caSecret", "secrets", "spec.sources[0].http.caSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return httpSrc(func(h *v1alpha2.HTTPSource) { h.CASecret = secretRef(n) }), nil
	}},
	{"helmRepository auth secret", "secrets", "spec.sources[0].helmRepository.auth.secret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("https://charts.example", func(h *v1alpha2.HelmRepositorySource) { h.Auth = &v1alpha2.HTTPAuth{Secret: *secretRef(n)} }), nil
	}},
	{"helmRepository auth secret of an oci:// repository", "secrets", "spec.sources[0].helmRepository.auth.secret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("oci://registry.example/charts", func(h *v1alpha2.HelmRepositorySource) { h.Auth = &v1alpha2.HTTPAuth{Secret: *secretRef(n)} }), nil
	}},
	{"helmRepository caSecret", "secrets", "spec.sources[0].helmRepository.caSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("https://charts.example", func(h *v1alpha2.HelmRepositorySource) { h.CASecret = secretRef(n) }), nil
	}},
	{"helmRepository pullSecret", "secrets", "spec.sources[0].helmRepository.pullSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("oci://registry.example/charts", func(h *v1alpha2.HelmRepositorySource) { h.PullSecret = secretRef(n) }), nil
	}},
	{"helmRepository cosign publicKeySecret", "secrets", "spec.sources[0].helmRepository.verify.cosign.publicKeySecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("oci://registry.example/charts", func(h *v1alpha2.HelmRepositorySource) {
			h.Verify = &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{PublicKeySecret: secretRef(n)}}
		}), nil
	}},
	{"helmRepository cosign keyless trustedRootConfigMap", "configmaps", "spec.sources[0].helmRepository.verify.cosign.keyless.trustedRootConfigMap", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("oci://registry.example/charts", func(h *v1alpha2.HelmRepositorySource) {
			h.Verify = &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{Keyless: &v1alpha2.KeylessVerification{
				TrustedRootConfigMap: v1alpha2.LocalObjectReference{Name: n}, Issuer: "https://issuer.example", Subject: "release@example.com"}}}
		}), nil
	}},
	{"helmRepository provenance keyringSecret", "secrets", "spec.sources[0].helmRepository.verify.provenance.keyringSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return helmRepo("https://charts.example", func(h *v1alpha2.HelmRepositorySource) {
			h.Verify = &v1alpha2.HelmRepositoryVerification{Provenance: &v1alpha2.ProvenanceVerification{KeyringSecret: *secretRef(n)}}
		}), nil
	}},
	{"catalog pullSecret", "secrets", "spec.sources[0].catalog.pullSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return catalogSrc(func(c *v1alpha2.CatalogSource) { c.PullSecret = secretRef(n) }), nil
	}},
	{"catalog caSecret", "secrets", "spec.sources[0].catalog.caSecret", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return catalogSrc(func(c *v1alpha2.CatalogSource) { c.CASecret = secretRef(n) }), nil
	}},
	{"configMaps source", "configmaps", "spec.sources[0].configMaps[1].configMap", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		// The first ConfigMap is the allowed "manifests".
		return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{
			{ConfigMap: v1alpha2.LocalObjectReference{Name: "manifests"}}, {ConfigMap: v1alpha2.LocalObjectReference{Name: n}},
		}}}, nil
	}},
	{"valuesFrom Secret", "secrets", "spec.config.valuesFrom[1]", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return upload, &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: "ConfigMap", Name: "manifests"}, {Kind: "Secret", Name: n}}}
	}},
	{"valuesFrom ConfigMap", "configmaps", "spec.config.valuesFrom[0]", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return upload, &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: "ConfigMap", Name: n, Key: "values.yaml"}}}
	}},
	{"image cosign keyless trustedRootConfigMap", "configmaps", "spec.sources[0].image.verify.cosign.keyless.trustedRootConfigMap", func(n string) ([]v1alpha2.BundleSource, *v1alpha2.BundleConfig) {
		return image(func(i *v1alpha2.ImageSource) {
			i.Verify = &v1alpha2.ImageVerification{Cosign: &v1alpha2.CosignVerification{Keyless: &v1alpha2.KeylessVerification{
				TrustedRootConfigMap: v1alpha2.LocalObjectReference{Name: n}, Issuer: "https://issuer.example", Subject: "release@example.com"}}}
		}), nil
	}},
}

// object returns a BundleDeployment (installing into ns as installer) or,
// when bundle is set, a Bundle, with the spec of ref naming name.
func (ref reference) object(bundle bool, ns, name string) client.Object {
	srcs, cfg := ref.spec(name)
	if bundle {
		return &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bundle")},
			Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: srcs, Config: cfg},
		}
	}
	bd := newBD(ns, "installer")
	bd.Spec.Sources, bd.Spec.Config = srcs, cfg
	return bd
}

// useMessage is what the admission denial and the re-check say about a
// Secret or ConfigMap the user may not use.
func useMessage(user, resource, name, field string) []string {
	return []string{
		fmt.Sprintf(`user %q`, user),
		fmt.Sprintf(`may not use %s %q in namespace "rukpak-system", named by %s;`, resource, name, field),
		fmt.Sprintf(`grant it with a Role in namespace "rukpak-system" allowing verb "use" on %s (apiGroups [""]) with resourceNames [%q], bound to the user or one of their groups`, resource, name),
	}
}

// Every field naming a Secret or ConfigMap, in a BundleDeployment and in a
// Bundle, needs verb use on it: refused without, admitted with.
func TestAdmissionReferences(t *testing.T) {
	for _, kind := range []string{v1alpha2.BundleDeploymentKind, v1alpha2.BundleKind} {
		for _, ref := range references {
			t.Run(kind+"/"+ref.kind, func(t *testing.T) {
				ctx := context.Background()
				ns := env.Namespace(t, "team-a")
				user := envtest.UniqueName("frank")
				grant(t, ns, user, editBundleDeployments, createBundles, useClass, impersonateInstaller, useManifests)
				name := envtest.UniqueName("theirs")
				obj := ref.object(kind == v1alpha2.BundleKind, ns, name)

				err := as(t, user).Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
				if !apierrors.IsForbidden(err) {
					t.Fatalf("create = %v, want Forbidden", err)
				}
				wantDenied(t, err, append(useMessage(user, ref.resource, name, ref.field), admission.ValidatingPolicyName)...)

				grantUse(t, userSubject(user), ref.resource, name)
				if err := as(t, user).Create(ctx, obj, client.DryRunAll); err != nil {
					t.Fatalf("create with use on %s %s: %v", ref.resource, name, err)
				}
			})
		}
	}
}

// Upload sources name nothing a user chooses: no use right is needed.
func TestAdmissionUploadExempt(t *testing.T) {
	ns := env.Namespace(t, "team-a")
	grant(t, ns, "gus", editBundleDeployments, useClass, impersonateInstaller)
	bd := newBD(ns, "installer")
	bd.Spec.Sources = upload
	if err := as(t, "gus").Create(context.Background(), bd, client.DryRunAll); err != nil {
		t.Fatalf("create with an upload source: %v", err)
	}
}

// The manager's ServiceAccount writes Bundles for BundleDeployments whose
// requester was checked: its Bundles are not checked again. Anyone else
// needs create on bundles first (RBAC), then the use rights.
func TestAdmissionBundleWriters(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	b := references[4].object(true, ns, "someone-elses")

	// A user without create on bundles is refused by RBAC.
	grant(t, ns, "hank", editBundleDeployments, useClass)
	if err := as(t, "hank").Create(ctx, b.DeepCopyObject().(client.Object), client.DryRunAll); !apierrors.IsForbidden(err) || strings.Contains(err.Error(), admission.ValidatingPolicyName) {
		t.Fatalf("create as a user without create on bundles = %v, want Forbidden by RBAC", err)
	}

	// The manager's ServiceAccount may create bundles (config/rbac) and
	// is not checked for use: no policy matches its Bundles, which it
	// writes as it wants them (it records itself as their requester,
	// TestAdmissionManagersOwnBundles).
	manager := "system:serviceaccount:rukpak-system:rukpak-manager"
	grant(t, ns, manager, createBundles)
	created := b.DeepCopyObject().(client.Object)
	if err := as(t, manager).Create(ctx, created, client.DryRunAll); err != nil {
		t.Fatalf("create as the manager: %v", err)
	}
	if got, ok := created.GetAnnotations()[v1alpha2.AnnotationRequestedBy]; ok {
		t.Fatalf("requested-by = %q on a Bundle the manager wrote without it: a policy changed the manager's Bundle", got)
	}
}

// Only the manager (and system:masters) may create a Bundle that records
// its content (spec.unpacked): a team allowed to write Bundles could
// otherwise name another team's content digest as its own Bundle's and
// read that content from the content server.
func TestAdmissionUnpackRecord(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	record := &v1alpha2.UnpackRecord{ContentDigest: digest0, ObjectCount: 1}
	bundle := func(u *v1alpha2.UnpackRecord) *v1alpha2.Bundle {
		return &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bundle")},
			Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: upload, Unpacked: u},
		}
	}
	manager := "system:serviceaccount:rukpak-system:rukpak-manager"
	team := envtest.UniqueName("team-writer")
	grant(t, ns, manager, createBundles)
	grant(t, ns, team, createBundles, useClass)
	tests := []struct {
		name    string
		as      client.Client
		record  *v1alpha2.UnpackRecord
		wantErr []string
	}{
		{name: "a team's Bundle without a record", as: as(t, team), record: nil},
		{name: "a team's Bundle with a record", as: as(t, team), record: record, wantErr: []string{
			admission.ValidatingPolicyName, `user "` + team + `" may not set spec.unpacked of Bundle`,
			"only the rukpak manager (rukpak-system/rukpak-manager) records what it unpacked"}},
		{name: "the manager's", as: as(t, manager), record: record},
		{name: "system:masters'", as: env.Client, record: record},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.as.Create(ctx, bundle(tt.record), client.DryRunAll)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("create = %v, want Forbidden", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A spec may name at most refs.MaxDistinct different objects in at most
// refs.MaxFields fields: within the limits the checks fit the CEL budget,
// beyond them the refusal says why, for admins too.
func TestAdmissionReferenceLimits(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	user := envtest.UniqueName("ivy")
	grant(t, ns, user, editBundleDeployments, useClass, impersonateInstaller)
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("creds-%02d", i)
		}
		return out
	}
	// sources: one image source per name, with a pull and a CA Secret.
	sources := func(names []string) []v1alpha2.BundleSource {
		var out []v1alpha2.BundleSource
		for _, n := range names {
			out = append(out, image(func(i *v1alpha2.ImageSource) { i.PullSecret, i.CASecret = secretRef(n), secretRef(n) })...)
		}
		return out
	}
	// paired: two names per image source, pull and CA Secret.
	paired := func(names []string) []v1alpha2.BundleSource {
		var out []v1alpha2.BundleSource
		for i := 0; i < len(names); i += 2 {
			pull, ca := names[i], names[min(i+1, len(names)-1)]
			out = append(out, image(func(i *v1alpha2.ImageSource) { i.PullSecret, i.CASecret = secretRef(pull), secretRef(ca) })...)
		}
		return out
	}
	for _, n := range names(refs.MaxDistinct) {
		grantUse(t, userSubject(user), "secrets", n)
		grantUse(t, userSubject(user), "configmaps", n)
	}
	// configMaps: fields ConfigMaps in sources of 8, cycling over names.
	configMaps := func(fields int, names []string) []v1alpha2.BundleSource {
		var out []v1alpha2.BundleSource
		for f := 0; f < fields; f += 8 {
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeConfigMaps}
			for j := f; j < min(f+8, fields); j++ {
				src.ConfigMaps = append(src.ConfigMaps, v1alpha2.ConfigMapSource{ConfigMap: v1alpha2.LocalObjectReference{Name: names[j%len(names)]}})
			}
			out = append(out, src)
		}
		return out
	}
	// The most sources, each with the most ConfigMaps, all the same.
	var most []v1alpha2.BundleSource
	for range 16 {
		cms := make([]v1alpha2.ConfigMapSource, 64)
		for j := range cms {
			cms[j].ConfigMap.Name = "manifests"
		}
		most = append(most, v1alpha2.BundleSource{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: cms})
	}

	tests := []struct {
		name    string
		client  client.Client
		sources []v1alpha2.BundleSource
		denied  []string
	}{
		{name: "16 Secrets in 32 fields, each allowed", client: as(t, user), sources: sources(names(refs.MaxDistinct))},
		{name: "64 fields naming 16 ConfigMaps, each allowed", client: as(t, user), sources: configMaps(refs.MaxFields, names(refs.MaxDistinct))},
		{name: "65 fields", client: as(t, user), sources: append(configMaps(refs.MaxFields, names(refs.MaxDistinct)), image(func(i *v1alpha2.ImageSource) { i.PullSecret = secretRef("creds-00") })...),
			denied: []string{"names 65 Secrets and ConfigMaps (counting repeats)"}},
		{name: "17 Secrets", client: as(t, user), sources: paired(names(refs.MaxDistinct + 1)),
			denied: []string{"names 17 different Secrets and ConfigMaps; at most 16 different ones, in at most 64 fields"}},
		{name: "17 Secrets as an admin", client: env.Client, sources: paired(names(refs.MaxDistinct + 1)),
			denied: []string{"names 17 different Secrets and ConfigMaps"}},
		{name: "1024 fields", client: env.Client, sources: most,
			denied: []string{"names 1024 Secrets and ConfigMaps (counting repeats)"}},
		{name: "the 16th Secret not allowed", client: as(t, user),
			sources: sources(append(names(refs.MaxDistinct - 1)[1:], "creds-00", "not-granted")),
			denied:  useMessage(user, "secrets", "not-granted", "spec.sources[15].image.pullSecret")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bd := newBD(ns, "installer")
			bd.Spec.Sources = tt.sources
			err := tt.client.Create(ctx, bd, client.DryRunAll)
			if tt.denied == nil {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			wantDenied(t, err, tt.denied...)
			if strings.Contains(err.Error(), "cost") || strings.Contains(err.Error(), "budget") {
				t.Errorf("refused for its CEL cost, want a clear limit: %v", err)
			}
		})
	}
}

// The re-check covers every reference kind: NotAuthorized naming the
// object and field until the requester may use it; then allowed. A
// Bundle is checked the same way, without an identity, unless the manager
// wrote it.
func TestCheckReferences(t *testing.T) {
	ctx := context.Background()
	c := checker(t)
	c.TrustedUsers = []string{"the-manager"}
	uploads := fakeUploads{}
	c.Uploads = uploads
	for _, kind := range []string{v1alpha2.BundleDeploymentKind, v1alpha2.BundleKind} {
		for _, ref := range references {
			t.Run(kind+"/"+ref.kind, func(t *testing.T) {
				ns := env.Namespace(t, "team-a")
				user := envtest.UniqueName("jo")
				// The upload some specs name is the user's own.
				uploads[digest0] = []string{user}
				grant(t, ns, user, useClass, impersonateInstaller, useManifests)
				name := envtest.UniqueName("theirs")
				obj := ref.object(kind == v1alpha2.BundleKind, ns, name)
				obj.SetAnnotations(map[string]string{v1alpha2.AnnotationRequestedBy: user, v1alpha2.AnnotationRequestedByGroups: "system:authenticated"})
				check := func() error {
					if b, ok := obj.(*v1alpha2.Bundle); ok {
						return c.CheckBundle(ctx, b)
					}
					return c.Check(ctx, obj.(*v1alpha2.BundleDeployment))
				}
				wantNotAuthorized(t, check(), useMessage(user, ref.resource, name, ref.field)...)

				grantUse(t, userSubject(user), ref.resource, name)
				if err := check(); err != nil {
					t.Fatalf("Check() with use = %v, want nil", err)
				}
				if kind == v1alpha2.BundleKind {
					obj.SetAnnotations(map[string]string{v1alpha2.AnnotationRequestedBy: "the-manager"})
					obj.(*v1alpha2.Bundle).Spec.ProvisionerClassName = "not-granted"
					if err := check(); err != nil {
						t.Fatalf("CheckBundle() of the manager's Bundle = %v, want nil", err)
					}
				}
			})
		}
	}
}

// A user whose right to use a Secret is revoked after writing the
// BundleDeployment fails the re-check.
func TestCheckRevokedUse(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	user := envtest.UniqueName("kim")
	grant(t, ns, user, editBundleDeployments, useClass, impersonateInstaller)
	ref := references[4] // http auth secret
	binding := grantUse(t, userSubject(user), "secrets", "kims-token")
	bd := ref.object(false, ns, "kims-token").(*v1alpha2.BundleDeployment)
	bd.Spec.Paused = true
	if err := as(t, user).Create(ctx, bd); err != nil {
		t.Fatalf("create as %s: %v", user, err)
	}
	defer cleanup(t, bd)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	c := checker(t)
	c.Uploads = fakeUploads{digest0: {user}} // the spec's upload is the user's own
	if err := c.Check(ctx, bd); err != nil {
		t.Fatalf("Check() = %v, want nil", err)
	}
	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	var err error
	envtest.Eventually(t, 10*time.Second, func() error {
		if err = c.Check(ctx, bd); err == nil {
			return fmt.Errorf("still allowed")
		}
		return nil
	})
	wantNotAuthorized(t, err, useMessage(user, "secrets", "kims-token", ref.field)...)
}
