package image

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name  string
		repo  string
		auths []string // keys; the entry of key i has username "i"
		want  string   // the username of the entry found, "" for none
	}{
		{name: "host", repo: "registry.example.com/team/app", auths: []string{"other.example.com", "registry.example.com"}, want: "1"},
		{name: "host with port", repo: "localhost:5000/app", auths: []string{"localhost", "localhost:5000"}, want: "1"},
		{name: "scheme and API path are ignored", repo: "registry.example.com/app", auths: []string{"https://registry.example.com/v2/"}, want: "0"},
		{name: "host is case-insensitive", repo: "registry.example.com/app", auths: []string{"HTTPS://Registry.Example.COM"}, want: "0"},
		{name: "Docker Hub as docker login writes it", repo: "nginx", auths: []string{"https://index.docker.io/v1/"}, want: "0"},
		{name: "Docker Hub as docker.io", repo: "docker.io/library/nginx", auths: []string{"docker.io"}, want: "0"},
		{name: "longest repository path wins", repo: "registry.example.com/team/app",
			auths: []string{"registry.example.com", "registry.example.com/team", "registry.example.com/team/app/x"}, want: "1"},
		{name: "path must match whole segments", repo: "registry.example.com/teamwork/app",
			auths: []string{"registry.example.com/team"}, want: ""},
		{name: "no entry for the registry", repo: "registry.example.com/app", auths: []string{"example.com", "registry.example.org"}, want: ""},
		{name: "no entries", repo: "registry.example.com/app", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, err := name.NewRepository(tt.repo)
			if err != nil {
				t.Fatal(err)
			}
			auths := map[string]authn.AuthConfig{}
			for i, k := range tt.auths {
				auths[k] = authn.AuthConfig{Username: string(rune('0' + i)), Password: "p"}
			}
			got, ok := lookup(auths, repo)
			if ok != (tt.want != "") || got.Username != tt.want {
				t.Fatalf("lookup = %q, %v; want %q", got.Username, ok, tt.want)
			}
		})
	}
}

// TestCredentials: WithAuth's Secret, read as a registry takes it, in
// place of the source's pull Secret; a refused credential's message names
// what to check.
func TestCredentials(t *testing.T) {
	ns := v1alpha2.SystemNamespace
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "userpass", Namespace: ns},
			Data: map[string][]byte{"username": []byte("puller"), "password": []byte("s3cret")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: ns},
			Data: map[string][]byte{"token": []byte(" t0ken\n"), "username": []byte("ignored"), "password": []byte("ignored")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nopassword", Namespace: ns},
			Data: map[string][]byte{"username": []byte("puller")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"username":"docker","password":"pw"}}}`)}},
	}
	c := fake.NewClientBuilder().WithObjects(objs...).Build()
	s := New(credentials.NewReader(c, ns))
	repo, err := name.NewRepository("registry.example/charts/greeter")
	if err != nil {
		t.Fatal(err)
	}
	pull := &v1alpha2.ImageSource{PullSecret: &v1alpha2.LocalObjectReference{Name: "pull"}}
	tests := []struct {
		name   string
		img    *v1alpha2.ImageSource
		auth   string // the Secret of WithAuth; "" for none
		want   authn.AuthConfig
		check  string
		reason string // of the failure, "" for none
		msg    string
	}{
		{name: "username and password", img: pull, auth: "userpass",
			want: authn.AuthConfig{Username: "puller", Password: "s3cret"}, check: "check the auth Secret " + ns + "/userpass"},
		{name: "a token wins, whitespace trimmed", img: pull, auth: "token",
			want: authn.AuthConfig{RegistryToken: "t0ken"}, check: "check the auth Secret " + ns + "/token"},
		{name: "no auth: the pull Secret", img: pull,
			want: authn.AuthConfig{Username: "docker", Password: "pw"}, check: "check the image's pullSecret"},
		{name: "no auth and no pull Secret: anonymous", img: &v1alpha2.ImageSource{}, check: "check the image's pullSecret"},
		{name: "a username without a password", img: pull, auth: "nopassword",
			reason: v1alpha2.ReasonUnpackFailed, msg: "Secret " + ns + "/nopassword has a username key but no password key"},
		{name: "neither", img: pull, auth: "empty",
			reason: v1alpha2.ReasonUnpackFailed, msg: "Secret " + ns + "/empty has neither a token key nor a username key"},
		{name: "missing", img: pull, auth: "missing",
			reason: v1alpha2.ReasonSourceNotFound, msg: "Secret " + ns + "/missing not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []CallOption
			if tt.auth != "" {
				opts = append(opts, WithAuth(&v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: tt.auth}}))
			}
			auth, check, err := s.credentials(context.Background(), tt.img, callOf(opts), repo)
			if tt.reason != "" {
				if f := failure.As(err); f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, tt.msg) {
					t.Fatalf("error = %v, want %s holding %q", err, tt.reason, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := authn.Authorization(context.Background(), auth)
			if err != nil {
				t.Fatal(err)
			}
			got.Auth = "" // a docker config's entry carries its base64 too
			if *got != tt.want || check != tt.check {
				t.Fatalf("credentials = %+v, %q; want %+v, %q", *got, check, tt.want, tt.check)
			}
		})
	}
}
