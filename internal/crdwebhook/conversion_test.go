//go:build integration

package crdwebhook

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha1"
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestConversionWebhook: the webhook server registers itself as the
// conversion of rukpak's CRDs, and the API server converts through it: a
// BundleDeployment and a Bundle created as v1alpha1 (the original README's
// shape) are stored as v1alpha2, read back unchanged as v1alpha1 and
// listed in both versions; a v1alpha2 field v1alpha1 cannot show survives
// an update made through v1alpha1.
func TestConversionWebhook(t *testing.T) {
	ctx := context.Background()
	startWebhook(t)
	envtest.Eventually(t, 30*time.Second, func() error {
		for _, name := range ConvertedCRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || len(c.Webhook.ClientConfig.CABundle) == 0 {
				return fmt.Errorf("%s: conversion %+v", name, c)
			}
		}
		return nil
	})

	src := v1alpha1.BundleSource{Type: v1alpha1.SourceTypeImage, Image: &v1alpha1.ImageSource{Ref: "quay.io/example/bundle@sha256:1f1b1e1ca1f1b1e1ca1f1b1e1ca1f1b1e1ca1f1b1e1ca1f1b1e1ca1f1b1e1ca1"}}
	bd := &v1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("readme")},
		Spec: v1alpha1.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, Template: v1alpha1.BundleTemplate{
			Metadata: v1alpha1.TemplateMetadata{Labels: map[string]string{"app": "my-bundle"}},
			Spec:     v1alpha1.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Source: src},
		}},
	}
	// The API server may take a moment to use the new conversion.
	envtest.Eventually(t, 30*time.Second, func() error { return env.Client.Create(ctx, bd.DeepCopy()) })

	stored := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.InstallNamespace != v1alpha1.DefaultInstallNamespace || len(stored.Spec.Sources) != 1 || stored.Spec.Sources[0].Image.Ref != src.Image.Ref {
		t.Fatalf("stored as v1alpha2: %+v", stored.Spec)
	}
	got := &v1alpha1.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, got); err != nil {
		t.Fatal(err)
	}
	// Nothing v1alpha1 cannot show yet (v1alpha2's defaults are implied),
	// so no annotation keeps anything.
	_, kept := got.Annotations[v1alpha1.AnnotationV1alpha2]
	if got.Spec.Template.Metadata.Labels["app"] != "my-bundle" || got.Spec.Template.Spec.Source.Image.Ref != src.Image.Ref || kept {
		t.Fatalf("read back as v1alpha1: %+v, annotations %v", got.Spec, got.Annotations)
	}

	// A v1alpha2-only field, then an edit through v1alpha1.
	stored.Spec.RevisionHistoryLimit = ptr.To[int32](7)
	if err := env.Client.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		cur := &v1alpha1.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, cur); err != nil {
			return err
		}
		cur.Spec.Template.Metadata.Labels["tier"] = "web"
		return env.Client.Update(ctx, cur)
	})
	after := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, after); err != nil {
		t.Fatal(err)
	}
	if l := after.Spec.RevisionHistoryLimit; l == nil || *l != 7 {
		t.Fatalf("revisionHistoryLimit = %v after an update through v1alpha1, want 7", l)
	}
	view := &v1alpha1.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, view); err != nil {
		t.Fatal(err)
	}
	if view.Spec.Template.Metadata.Labels["tier"] != "web" {
		t.Fatalf("the template label set through v1alpha1 is lost: %+v", view.Spec.Template.Metadata)
	}

	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("readme-bundle")},
		Spec: v1alpha1.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Source: src}}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	for _, list := range []client.ObjectList{&v1alpha1.BundleDeploymentList{}, &v1alpha1.BundleList{}, &v1alpha2.BundleList{}} {
		if err := env.Client.List(ctx, list); err != nil {
			t.Fatalf("listing %T: %v", list, err)
		}
	}
	bundles := &v1alpha1.BundleList{}
	if err := env.Client.List(ctx, bundles); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, item := range bundles.Items {
		found = found || (item.Name == b.Name && item.Spec.Source.Image.Ref == src.Image.Ref)
	}
	if !found {
		t.Fatalf("the v1alpha1 Bundle is not listed as v1alpha1")
	}
}

// TestServeV1alpha1: NoV1alpha1 makes the registrar stop serving
// core.rukpak.io/v1alpha1 (the API server then refuses requests for it,
// while v1alpha2 is served as before), and without it the registrar serves
// the version again.
func TestServeV1alpha1(t *testing.T) {
	ctx := context.Background()
	ca, err := servingcert.NewCA("test-ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _, err := ca.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Each CRD's conversion as it was, put back afterwards.
	for _, name := range ConvertedCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		was := crd.Spec.Conversion
		t.Cleanup(func() {
			envtest.Eventually(t, 10*time.Second, func() error {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
					return err
				}
				crd.Spec.Conversion = was
				return env.Client.Update(ctx, crd)
			})
		})
	}
	served := func(noV1alpha1 bool) {
		t.Helper()
		r := &registrar{client: env.Client, opts: Options{AdvertiseAddress: "127.0.0.1:9", NoV1alpha1: noV1alpha1}}
		if err := r.registerConversion(ctx, caPEM); err != nil {
			t.Fatal(err)
		}
		for _, name := range ConvertedCRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				t.Fatal(err)
			}
			for _, v := range crd.Spec.Versions {
				if want := v.Name != V1alpha1 || !noV1alpha1; v.Served != want {
					t.Fatalf("%s: version %s served = %v, want %v", name, v.Name, v.Served, want)
				}
			}
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	discovered := func(want bool) func() error {
		return func() error {
			_, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
			switch {
			case want && err != nil:
				return fmt.Errorf("v1alpha1 is not served: %w", err)
			case !want && err == nil:
				return fmt.Errorf("v1alpha1 is still served")
			case !want && !apierrors.IsNotFound(err):
				return fmt.Errorf("discovering v1alpha1: %w", err)
			}
			return nil
		}
	}
	served(true)
	envtest.Eventually(t, 30*time.Second, discovered(false))
	if err := env.Client.List(ctx, &v1alpha2.BundleDeploymentList{}); err != nil {
		t.Fatalf("v1alpha2 is no longer served: %v", err)
	}
	served(false)
	envtest.Eventually(t, 30*time.Second, discovered(true))
}
