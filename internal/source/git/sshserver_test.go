package git

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshServer serves git-upload-pack over SSH on 127.0.0.1 to one client key.
type sshServer struct {
	addr    string
	hostKey ssh.Signer
	up      *uploadPack
	config  *ssh.ServerConfig
}

// startSSH starts an SSH server of up accepting the public key client.
func startSSH(t *testing.T, up *uploadPack, client ssh.PublicKey) *sshServer {
	t.Helper()
	s := &sshServer{hostKey: newSigner(t), up: up}
	s.config = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), client.Marshal()) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("unknown public key")
		},
	}
	s.config.AddHostKey(s.hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	s.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// knownHosts returns a known_hosts line for the server with key.
func (s *sshServer) knownHosts(key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.addr)}, key) + "\n"
}

// url returns the ssh:// URL of the repository.
func (s *sshServer) url() string { return "ssh://git@" + s.addr + repoPath }

func (s *sshServer) serve(c net.Conn) {
	_, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		_ = c.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go s.session(ch, chReqs)
	}
}

// session runs the exec request of one session.
func (s *sshServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var exec struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &exec); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		s.up.count()
		status := s.exec(ch, exec.Command)
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// exec runs "git-upload-pack '<path>'" over ch and returns its exit status.
func (s *sshServer) exec(ch ssh.Channel, command string) uint32 {
	path, ok := strings.CutPrefix(command, transport.UploadPackServiceName+" ")
	if !ok {
		_, _ = fmt.Fprintf(ch.Stderr(), "fatal: unsupported command %q\n", command)
		return 1
	}
	path = strings.Trim(path, "'")
	ctx := context.Background()
	ar, err := s.up.advertise(ctx, path)
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		_, _ = fmt.Fprintf(ch.Stderr(), "fatal: '%s' does not appear to be a git repository\n", path)
		return 128
	}
	if err == nil {
		err = ar.Encode(ch)
	}
	if err != nil {
		_, _ = fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	req := packp.NewUploadPackRequest()
	if err := req.Decode(ch); err != nil {
		return 0 // the client only listed the references (it sent a flush)
	}
	if err := s.up.upload(ctx, path, req, ch); err != nil {
		_, _ = fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	return 0
}

// newSigner returns a new ed25519 SSH key.
func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newClientKey returns a new ed25519 private key in OpenSSH PEM form and
// its public key.
func newClientKey(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), sshPub
}

// authorizedKey returns k in authorized_keys form, without a newline.
func authorizedKey(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
