//go:build integration

package git

import (
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// authTests are the cases of HTTP(S) credentials and CA bundles.
func authTests() []sourceTest {
	basic := serverOpts{user: "alice", pass: "s3cret"}
	withSecret := func(data map[string]string) func(*fixture) v1alpha2.GitSource {
		return func(f *fixture) v1alpha2.GitSource {
			return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Auth: &v1alpha2.GitAuth{Secret: *f.secret(data)}}
		}
	}
	return []sourceTest{
		{name: "basic auth",
			opts: basic, src: withSecret(map[string]string{"username": "alice", "password": "s3cret"}),
			wantCommit: c2, wantFiles: v2Files},
		{name: "token",
			opts: serverOpts{user: "git", pass: "tok"}, src: withSecret(map[string]string{"token": "tok"}),
			wantCommit: c2, wantFiles: v2Files},
		{name: "token with a username",
			opts: basic, src: withSecret(map[string]string{"username": "alice", "token": "s3cret"}),
			wantCommit: c2, wantFiles: v2Files},
		{name: "wrong password",
			opts: basic, src: withSecret(map[string]string{"username": "alice", "password": "guess"}),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {repo}"},
		{name: "no credentials",
			opts: basic, src: branch("main"),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {repo}"},
		{name: "wrong password of a pinned commit fails at unpack",
			opts: basic,
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: f.c1.String()},
					Auth: &v1alpha2.GitAuth{Secret: *f.secret(map[string]string{"username": "alice", "password": "guess"})}}
			},
			wantRequests: ptr.To(0), wantCommit: c1,
			wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {repo}"},
		{name: "Secret without password or token",
			opts: basic, src: withSecret(map[string]string{"username": "alice"}),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "has neither a password nor a token key"},
		{name: "missing Secret",
			opts: basic,
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Auth: &v1alpha2.GitAuth{Secret: v1alpha2.LocalObjectReference{Name: "absent"}}}
			},
			wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: "Secret rukpak-system/absent not found"},
		{name: "TLS with a CA",
			opts: serverOpts{tls: true},
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, CASecret: f.secret(map[string]string{"ca.crt": string(f.caPEM)})}
			},
			wantCommit: c2, wantFiles: v2Files, wantUploads: shallowOf(c2)},
		{name: "TLS and basic auth",
			opts: serverOpts{tls: true, user: "alice", pass: "s3cret"},
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"},
					CASecret: f.secret(map[string]string{"ca.crt": string(f.caPEM)}),
					Auth:     &v1alpha2.GitAuth{Secret: *f.secret(map[string]string{"username": "alice", "password": "s3cret"})}}
			},
			wantCommit: c2, wantFiles: v2Files},
		{name: "TLS with an unknown CA is retried",
			opts: serverOpts{tls: true}, src: branch("main"),
			wantResolve: transient, wantMsg: "certificate"},
		{name: "TLS without verification",
			opts: serverOpts{tls: true},
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, InsecureSkipTLSVerify: true}
			},
			wantCommit: c2, wantFiles: v2Files},
		{name: "CA Secret without ca.crt",
			opts: serverOpts{tls: true},
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, CASecret: f.secret(map[string]string{"other": "x"})}
			},
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "has no ca.crt key"},
	}
}

// sshTests are the cases of SSH repositories.
func sshTests() []sourceTest {
	sshOpts := serverOpts{ssh: true}
	withHosts := func(hosts func(f *fixture) string) func(*fixture) v1alpha2.GitSource {
		return func(f *fixture) v1alpha2.GitSource {
			return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Auth: f.sshAuth(hosts(f))}
		}
	}
	known := func(f *fixture) string { return f.ssh.knownHosts(f.ssh.hostKey.PublicKey()) }
	return []sourceTest{
		{name: "SSH",
			opts: sshOpts, src: withHosts(known), wantRequests: ptr.To(1),
			wantCommit: c2, wantFiles: v2Files, wantUploads: shallowOf(c2)},
		{name: "SSH commit pinned",
			opts: sshOpts,
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: f.c1.String()}, Auth: f.sshAuth(known(f))}
			},
			wantRequests: ptr.To(0), wantCommit: c1, wantFiles: v1Files, wantUploads: shallowOf(c1)},
		{name: "SSH annotated tag",
			opts: sshOpts,
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Tag: "v1"}, Auth: f.sshAuth(known(f))}
			},
			wantCommit: c1, wantFiles: v1Files},
		{name: "SSH with known_hosts of several hosts",
			opts: sshOpts,
			src: func(f *fixture) v1alpha2.GitSource {
				hosts := "# comment\n" + "github.com " + newSignerKey(f) + "\n" + known(f)
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "release"}, Auth: f.sshAuth(hosts)}
			},
			wantCommit: c1, wantFiles: v1Files},
		{name: "SSH unknown host",
			opts: sshOpts, src: withHosts(func(f *fixture) string { return "example.com " + newSignerKey(f) + "\n" }),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "is not in known_hosts"},
		{name: "SSH wrong host key",
			opts: sshOpts, src: withHosts(func(f *fixture) string { return f.ssh.knownHosts(newSigner(f.t).PublicKey()) }),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "does not match known_hosts"},
		{name: "SSH without known_hosts",
			opts: sshOpts, src: withHosts(func(*fixture) string { return "" }),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "has no known_hosts key"},
		{name: "SSH wrong client key",
			opts: sshOpts,
			src: func(f *fixture) v1alpha2.GitSource {
				f.sshKey, _ = newClientKey(f.t)
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Auth: f.sshAuth(known(f))}
			},
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {repo}"},
		{name: "SSH server failing uploads is retried",
			opts: serverOpts{ssh: true, failUploads: true},
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: f.c1.String()}, Auth: f.sshAuth(known(f))}
			},
			wantCommit: c1, wantUnpack: transient, wantMsg: "fetching from {repo}"},
		{name: "SSH without auth",
			opts: sshOpts, src: branch("main"),
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "needs auth.secret"},
	}
}

// newSignerKey returns a new public key in authorized_keys form.
func newSignerKey(f *fixture) string {
	return authorizedKey(newSigner(f.t).PublicKey())
}
