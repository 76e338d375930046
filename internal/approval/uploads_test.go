//go:build integration

package approval_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	uploadstore "github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

// fakeUploads records who uploaded each digest.
type fakeUploads map[string][]string

func (f fakeUploads) Uploaders(_ context.Context, digest string) ([]string, error) {
	return f[digest], nil
}

var _ approval.Uploaders = fakeUploads{}

func digestOf(data []byte) (digest, hexDigest string) {
	sum := sha256.Sum256(data)
	hexDigest = hex.EncodeToString(sum[:])
	return "sha256:" + hexDigest, hexDigest
}

// grantUpload lets user use the upload hexDigest, as docs/security.md
// tells an admin (or the uploader) to, and waits until the authorizer
// sees it.
func grantUpload(t *testing.T, user, hexDigest string) {
	t.Helper()
	name := envtest.UniqueName("use-upload")
	rule := rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{approval.UploadResource},
		ResourceNames: []string{hexDigest}, Verbs: []string{"use"}}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{userSubject(user)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
	} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	waitAllowed(t, authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
		Verb: "use", Group: v1alpha2.GroupVersion.Group, Resource: approval.UploadResource, Name: hexDigest}}, true)
}

// The re-check of uploads (attack 1 of issue 24): team B names team A's
// upload, whose digest it read in A's BundleDeployment, to install A's
// content as its own ServiceAccount. An upload may be named only by its
// uploader, by a requester installing as the ServiceAccount that uploaded
// it, or with a grant of use on uploads/HEX; a second uploader of the same
// bytes becomes one by uploading them, never by the digest alone.
func TestCheckUploads(t *testing.T) {
	ctx := context.Background()
	teamA, teamB := env.Namespace(t, "team-a"), env.Namespace(t, "team-b")
	store := uploadstore.NewStore(env.Client, env.Client, env.Namespace(t, "uploads"))
	installerOf := func(ns string) string { return "system:serviceaccount:" + ns + ":installer" }
	put := func(data []byte, uploader string) {
		t.Helper()
		digest, _ := digestOf(data)
		if err := store.Put(ctx, bytes.NewReader(data), digest, uploader); err != nil {
			t.Fatalf("Put as %s: %v", uploader, err)
		}
	}
	dataA, dataU := []byte("team a's bundle, holding its Secret"), []byte("uma's own bundle")
	digestA, hexA := digestOf(dataA)
	digestU, _ := digestOf(dataU)
	missing, _ := digestOf([]byte("never uploaded"))
	put(dataA, installerOf(teamA)) // rukpakctl run uploads as the ServiceAccount
	put(dataU, "uma")

	alice, bob, uma := envtest.UniqueName("alice"), envtest.UniqueName("bob"), "uma"
	grant(t, teamA, alice, useClass, impersonateInstaller)
	grant(t, teamB, bob, useClass, impersonateInstaller)
	grant(t, teamA, uma, useClass, impersonateInstaller)
	c := checker(t)
	c.Uploads = store

	tests := []struct {
		name      string
		bundle    bool // check a Bundle of the same spec (no identity)
		requester string
		groups    string
		ns        string // install namespace (installer ServiceAccount)
		digest    string
		before    func(t *testing.T)
		wantErr   []string // nil: allowed
		wantFail  string   // the failure's reason, NotAuthorized by default
	}{
		{name: "the install identity uploaded it", requester: alice, ns: teamA, digest: digestA},
		{name: "the requester uploaded it", requester: uma, ns: teamA, digest: digestU},
		{name: "another team names it", requester: bob, ns: teamB, digest: digestA, wantErr: []string{
			`user "` + bob + `", who last changed this BundleDeployment's spec`,
			`may not use upload ` + digestA + `, named by spec.sources[0].upload.digest`,
			`neither the user nor the install identity "` + installerOf(teamB) + `" uploaded it`,
			`grant it with a ClusterRole allowing verb "use" on uploads (apiGroups ["core.rukpak.io"]) with resourceNames ["` + hexA + `"]`,
		}},
		{name: "another team in system:masters", requester: bob, groups: "system:masters", ns: teamB, digest: digestA},
		{name: "a Bundle of another writer", bundle: true, requester: alice, digest: digestU, wantErr: []string{
			`user "` + alice + `", who created this Bundle`, `may not use upload ` + digestU, "the user did not upload it",
		}},
		{name: "a Bundle of its uploader", bundle: true, requester: uma, digest: digestU},
		{name: "an upload that does not exist", requester: alice, ns: teamA, digest: missing,
			wantErr: []string{"upload " + missing + " not found"}, wantFail: v1alpha2.ReasonSourceNotFound},
		{name: "another team, granted use on the upload", requester: bob, ns: teamB, digest: digestA,
			before: func(t *testing.T) { grantUpload(t, bob, hexA) }},
		{name: "a second uploader of the same bytes", bundle: true, requester: uma, digest: digestA,
			before: func(t *testing.T) { put(dataA, uma) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before(t)
			}
			srcs := []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: tt.digest}}}
			annotations := map[string]string{v1alpha2.AnnotationRequestedBy: tt.requester, v1alpha2.AnnotationRequestedByGroups: tt.groups}
			var err error
			if tt.bundle {
				b := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: annotations},
					Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: srcs}}
				err = c.CheckBundle(ctx, b)
			} else {
				bd := newBD(tt.ns, "installer")
				bd.Annotations, bd.Spec.Sources = annotations, srcs
				err = c.Check(ctx, bd)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			want := tt.wantFail
			if want == "" {
				want = v1alpha2.ReasonNotAuthorized
			}
			if f := failure.As(err); f == nil || f.Reason != want {
				t.Fatalf("Check() = %v, want a %s failure", err, want)
			}
			wantDenied(t, err, tt.wantErr...)
		})
	}
}
