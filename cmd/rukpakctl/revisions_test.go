package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// hex64 is a 64-digit hex string made of n, for digests and sha256s.
func hex64(n int) string { return fmt.Sprintf("%064x", n) }

// imageRev is an image source pinned to digest n.
func imageRev(n int) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
		Ref: fmt.Sprintf("quay.io/example/op:v%d", n), Digest: "sha256:" + hex64(n),
	}}
}

func TestRollbackTargetClassMismatch(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec:   v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain},
		Status: v1alpha2.BundleDeploymentStatus{ActiveBundle: "x-2"}}
	revs := []v1alpha2.Bundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "x-1"}, Spec: v1alpha2.BundleSpec{ProvisionerClassName: "other"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "x-2"}, Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain}},
	}
	if _, err := rollbackTarget(bd, revs, ""); err == nil || !strings.Contains(err.Error(), "has class other") {
		t.Errorf("error = %v, want a class mismatch", err)
	}
	revs = revs[1:]
	if _, err := rollbackTarget(bd, revs, ""); !errors.Is(err, errNoRollbackTarget) {
		t.Errorf("error = %v, want errNoRollbackTarget", err)
	}
}
