package git

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// KnownHostsKey is the key of an SSH auth Secret holding the known_hosts
// lines the server's host key is checked against. It is required: rukpak
// never trusts a host key it has not been told about.
const KnownHostsKey = "known_hosts"

// sshDialTimeout bounds connecting to an SSH server (go-git's SSH dial does
// not follow the context).
const sshDialTimeout = 30 * time.Second

// sshAuth authenticates with a private key and checks host keys against
// the Secret's known_hosts.
type sshAuth struct {
	*gitssh.PublicKeys
}

// ClientConfig returns the SSH client configuration, with a dial timeout.
func (a sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	cfg, err := a.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = sshDialTimeout
	return cfg, nil
}

// sshCredentials reads ssh-privatekey and known_hosts from the Secret ref. The
// user is the one of the URL, "git" by default.
func (s *Source) sshCredentials(ctx context.Context, ref *v1alpha2.LocalObjectReference, ep *transport.Endpoint) (transport.AuthMethod, error) {
	sec, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	name := s.creds.Namespace() + "/" + ref.Name
	key, ok := sec.Data[corev1.SSHAuthPrivateKey]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s has no %s key", name, corev1.SSHAuthPrivateKey)
	}
	hosts, ok := sec.Data[KnownHostsKey]
	if !ok || len(hosts) == 0 {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed,
			"Secret %s has no %s key: the host keys of SSH servers are always checked", name, KnownHostsKey)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s: %s is encrypted; only unencrypted keys are supported", name, corev1.SSHAuthPrivateKey)
		}
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s: %s: %v", name, corev1.SSHAuthPrivateKey, err)
	}
	check, err := parseKnownHosts(hosts)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s: %s: %v", name, KnownHostsKey, err)
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	port := ep.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	return sshAuth{&gitssh.PublicKeys{User: user, Signer: signer, HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{
		HostKeyCallback:   checkHostKey(check),
		HostKeyAlgorithms: hostKeyAlgorithms(check, addr),
	}}}, nil
}

// parseKnownHosts returns the host key callback of known_hosts content.
// The knownhosts package reads files only, so the content goes through a
// temporary file that is removed at once.
func parseKnownHosts(content []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "rukpak-known_hosts-")
	if err != nil {
		return nil, fmt.Errorf("creating temporary file: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing temporary file: %w", err)
	}
	cb, err := knownhosts.New(f.Name())
	if err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	return cb, nil
}

// probeKey is a key no known_hosts lists: checking it makes the callback
// return the keys it knows for a host.
var probeKey, _ = ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))

// hostKeyAlgorithms returns the host key algorithms of the keys known_hosts
// lists for addr, so that the server presents one of those (an SSH client
// otherwise asks for its own preferred type, which known_hosts may lack);
// nil when it lists none, which makes the connection fail its host key
// check.
func hostKeyAlgorithms(check ssh.HostKeyCallback, addr string) []string {
	var keyErr *knownhosts.KeyError
	if err := check(addr, &net.TCPAddr{IP: net.IPv4zero}, probeKey); !errors.As(err, &keyErr) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range keyErr.Want {
		for _, a := range algorithmsOf(k.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// algorithmsOf returns the signature algorithms of a key type.
func algorithmsOf(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// checkHostKey wraps the errors of check in a hostKeyError.
func checkHostKey(check ssh.HostKeyCallback) ssh.HostKeyCallback {
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := check(host, remote, key); err != nil {
			return &hostKeyError{host: host, key: key, err: err}
		}
		return nil
	}
}

// hostKeyError is a host key known_hosts does not accept.
type hostKeyError struct {
	host string
	key  ssh.PublicKey
	err  error
}

// Error says whether the host is unknown, its key differs or is revoked.
func (e *hostKeyError) Error() string {
	key := e.key.Type() + " " + ssh.FingerprintSHA256(e.key)
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	switch {
	case errors.As(e.err, &keyErr) && len(keyErr.Want) == 0:
		return fmt.Sprintf("host %s is not in known_hosts (it presented the key %s)", e.host, key)
	case errors.As(e.err, &keyErr):
		return fmt.Sprintf("host key %s of %s does not match known_hosts: refusing to connect", key, e.host)
	case errors.As(e.err, &revoked):
		return fmt.Sprintf("host key %s of %s is revoked in known_hosts", key, e.host)
	}
	return fmt.Sprintf("checking host key of %s: %v", e.host, e.err)
}

// Unwrap returns the error of the known_hosts check.
func (e *hostKeyError) Unwrap() error { return e.err }
