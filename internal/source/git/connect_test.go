//go:build integration

package git

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source/credentials"
)

// TestConnect checks URL schemes and SSH settings without a server.
func TestConnect(t *testing.T) {
	f := &fixture{t: t}
	key, _ := newClientKey(t)
	hostKey := authorizedKey(newSigner(t).PublicKey())
	hosts := "example.com " + hostKey + "\n[example.com]:2222 " + hostKey + "\n"
	sshSecret := func(data map[string]string) *v1alpha2.GitAuth {
		return &v1alpha2.GitAuth{Secret: *f.secret(data)}
	}
	good := map[string]string{corev1.SSHAuthPrivateKey: string(key), KnownHostsKey: hosts}
	tests := []struct {
		name      string
		repo      string
		auth      *v1alpha2.GitAuth
		wantUser  string
		wantAlgos []string
		wantMsg   string // of an UnpackFailed failure
	}{
		{name: "scp-like", repo: "git@example.com:org/repo.git", auth: sshSecret(good),
			wantUser: "git", wantAlgos: []string{ssh.KeyAlgoED25519}},
		{name: "ssh URL with user and port", repo: "ssh://deploy@example.com:2222/r.git", auth: sshSecret(good),
			wantUser: "deploy", wantAlgos: []string{ssh.KeyAlgoED25519}},
		{name: "host missing from known_hosts", repo: "ssh://other.example.com/r.git", auth: sshSecret(good),
			wantUser: "git"},
		{name: "encrypted private key", repo: "git@example.com:r.git",
			auth:    sshSecret(map[string]string{corev1.SSHAuthPrivateKey: encryptedKey(t), KnownHostsKey: hosts}),
			wantMsg: "ssh-privatekey is encrypted"},
		{name: "no private key", repo: "git@example.com:r.git",
			auth:    sshSecret(map[string]string{KnownHostsKey: hosts}),
			wantMsg: "has no ssh-privatekey key"},
		{name: "local path", repo: "/srv/git/r.git", wantMsg: "file URLs are not supported"},
		{name: "git protocol", repo: "git://example.com/r.git", wantMsg: "git URLs are not supported"},
	}
	s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.connect(context.Background(), &v1alpha2.GitSource{Repository: tt.repo, Auth: tt.auth})
			if tt.wantMsg != "" {
				checkFailure(t, "connect", err, v1alpha2.ReasonUnpackFailed, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			a, ok := r.auth.(sshAuth)
			if !ok {
				t.Fatalf("auth is %T, want sshAuth", r.auth)
			}
			if a.User != tt.wantUser || !slices.Equal(a.HostKeyAlgorithms, tt.wantAlgos) {
				t.Fatalf("user %q, host key algorithms %v; want %q, %v", a.User, a.HostKeyAlgorithms, tt.wantUser, tt.wantAlgos)
			}
			cfg, err := a.ClientConfig()
			if err != nil || cfg.Timeout != sshDialTimeout || cfg.HostKeyCallback == nil {
				t.Fatalf("client config %+v, %v", cfg, err)
			}
		})
	}
}

func TestAlgorithmsOf(t *testing.T) {
	if got := algorithmsOf(ssh.KeyAlgoRSA); !slices.Equal(got, []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}) {
		t.Errorf("rsa: %v", got)
	}
	if got := algorithmsOf(ssh.KeyAlgoECDSA256); !slices.Equal(got, []string{ssh.KeyAlgoECDSA256}) {
		t.Errorf("ecdsa: %v", got)
	}
}

// encryptedKey returns a passphrase-protected private key in PEM form.
func encryptedKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("passphrase"))
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}
