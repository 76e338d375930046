//go:build integration

package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Uploads belong to those who sent their bytes: a second uploader is
// recorded only after sending the whole archive, never for the digest
// alone, and an annotation someone else writes names no one.
func TestUploaders(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	data := []byte("the archive of team a")
	digest := put(t, s, data)
	want := func(step string, users ...string) {
		t.Helper()
		got, err := s.Uploaders(ctx, digest)
		if err != nil {
			t.Fatalf("%s: Uploaders: %v", step, err)
		}
		slices.Sort(users)
		if !slices.Equal(got, users) {
			t.Fatalf("%s: uploaders %q, want %q", step, got, users)
		}
	}
	want("first upload", testUploader)

	const other = "system:serviceaccount:team-b:installer"
	tests := []struct {
		name    string
		user    string
		body    []byte
		wantErr string
		after   []string
	}{
		{"the same uploader again, no bytes", testUploader, nil, "", []string{testUploader}},
		{"another user with other bytes under the digest", other, []byte("team b's evil bytes"), "the archive has digest", []string{testUploader}},
		{"another user with no bytes", other, nil, "the archive has digest", []string{testUploader}},
		{"another user with the same bytes", other, data, "", []string{testUploader, other}},
		{"the second uploader again, no bytes", other, nil, "", []string{testUploader, other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Put(ctx, bytes.NewReader(tt.body), digest, tt.user)
			var mismatch *DigestError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Put: %v", err)
			case tt.wantErr != "" && (!errors.As(err, &mismatch) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Put = %v, want a DigestError containing %q", err, tt.wantErr)
			}
			want(tt.name, tt.after...)
		})
	}

	// An annotation of the uploader's form written by someone else (an
	// admin, with another field manager) is not a record.
	hexDigest, _ := ParseDigest(digest)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: ManifestName(hexDigest)}, cm); err != nil {
		t.Fatal(err)
	}
	forged := "system:serviceaccount:team-c:installer"
	cm.Annotations[uploaderKey(forged)] = forged
	cm.Annotations[UploaderAnnotationPrefix+"0000"] = "someone"
	if err := env.Client.Update(ctx, cm, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	want("after a forged annotation", testUploader, other)
}

// Put as the empty user records no one; a stored upload takes at most
// MaxUploaders different uploaders.
func TestUploadersLimits(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	data := []byte("popular content")
	digest := digestOf(t, bytes.NewReader(data))
	if err := s.Put(ctx, bytes.NewReader(data), digest, ""); err == nil || !strings.Contains(err.Error(), "no uploader") {
		t.Fatalf("Put without an uploader = %v, want a refusal", err)
	}
	for i := range MaxUploaders {
		if err := s.Put(ctx, bytes.NewReader(data), digest, fmt.Sprintf("user-%d", i)); err != nil {
			t.Fatalf("Put as user-%d: %v", i, err)
		}
	}
	err := s.Put(ctx, bytes.NewReader(data), digest, "one-too-many")
	var tooMany *UploadersError
	if !errors.As(err, &tooMany) || !strings.Contains(err.Error(), `grant you verb "use" on uploads/`) {
		t.Fatalf("Put of uploader %d = %v, want an UploadersError", MaxUploaders+1, err)
	}
	// Those recorded still reuse it.
	if err := s.Put(ctx, strings.NewReader("not read"), digest, "user-0"); err != nil {
		t.Fatalf("Put again as user-0: %v", err)
	}
}
