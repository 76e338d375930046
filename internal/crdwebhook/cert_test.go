//go:build integration

package crdwebhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/pkg/envtest"
)

type pems struct{ cert, key, ca []byte }

func ensure(t *testing.T, name string, hosts []string, at time.Time) pems {
	t.Helper()
	now = func() time.Time { return at }
	defer func() { now = time.Now }()
	cert, key, ca, err := EnsureCertificate(context.Background(), env.Client, v1alpha2.SystemNamespace, name, hosts)
	if err != nil {
		t.Fatalf("EnsureCertificate: %v", err)
	}
	return pems{cert, key, ca}
}

// verify checks that p's certificate is signed by p's CA for every host
// and valid at at.
func verify(t *testing.T, p pems, hosts []string, at time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.ca) {
		t.Fatal("CA PEM holds no certificate")
	}
	kp, err := servingcert.ParseKeyPair(p.cert, p.key)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if _, err := kp.Cert.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: at}); err != nil {
			t.Errorf("certificate for %s: %v", h, err)
		}
	}
}

func TestEnsureCertificate(t *testing.T) {
	hosts := []string{"127.0.0.1", "webhook.rukpak-system.svc"}
	start := time.Now()
	day := 24 * time.Hour
	tests := []struct {
		name string
		// before prepares the Secret and returns what it held.
		before       func(t *testing.T, name string) pems
		hosts        []string
		at           time.Time
		wantSameCert bool
		wantSameCA   bool
	}{
		{name: "creates", before: func(*testing.T, string) pems { return pems{} }, hosts: hosts, at: start},
		{name: "reuses", before: func(t *testing.T, n string) pems { return ensure(t, n, hosts, start) }, hosts: hosts, at: start.Add(day), wantSameCert: true, wantSameCA: true},
		{name: "reuses whatever the host order", before: func(t *testing.T, n string) pems { return ensure(t, n, hosts, start) }, hosts: []string{hosts[1], hosts[0]}, at: start, wantSameCert: true, wantSameCA: true},
		{name: "renews on host change", before: func(t *testing.T, n string) pems { return ensure(t, n, hosts, start) }, hosts: []string{"127.0.0.2"}, at: start, wantSameCA: true},
		{name: "renews near expiry", before: func(t *testing.T, n string) pems { return ensure(t, n, hosts, start) }, hosts: hosts, at: start.Add(340 * day), wantSameCA: true},
		{name: "renews the CA near its expiry", before: func(t *testing.T, n string) pems { return ensure(t, n, hosts, start) }, hosts: hosts, at: start.Add(3640 * day)},
		{name: "replaces garbage", before: func(t *testing.T, n string) pems {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha2.SystemNamespace, Name: n}, Data: map[string][]byte{"ca.crt": []byte("x")}}
			if err := env.Client.Create(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			return pems{ca: []byte("x")}
		}, hosts: hosts, at: start},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := envtest.UniqueName("cert")
			before := tt.before(t, name)
			got := ensure(t, name, tt.hosts, tt.at)
			verify(t, got, tt.hosts, tt.at)
			if same := bytes.Equal(got.cert, before.cert); same != tt.wantSameCert {
				t.Errorf("same certificate = %v, want %v", same, tt.wantSameCert)
			}
			if same := bytes.Equal(got.ca, before.ca); same != tt.wantSameCA {
				t.Errorf("same CA = %v, want %v", same, tt.wantSameCA)
			}
			if again := ensure(t, name, tt.hosts, tt.at); !bytes.Equal(again.cert, got.cert) {
				t.Error("a second call did not reuse the stored certificate")
			}
		})
	}
}

// TestEnsureCertificateRace runs replicas at once: all end with the one
// stored certificate.
func TestEnsureCertificateRace(t *testing.T) {
	name := envtest.UniqueName("cert")
	hosts := []string{"127.0.0.1"}
	results := make([]pems, 5)
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			var p pems
			p.cert, p.key, p.ca, errs[i] = EnsureCertificate(context.Background(), env.Client, v1alpha2.SystemNamespace, name, hosts)
			results[i] = p
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	stored := ensure(t, name, hosts, time.Now())
	for i, p := range results {
		if !bytes.Equal(p.cert, stored.cert) || !bytes.Equal(p.ca, stored.ca) {
			t.Errorf("replica %d uses a certificate that was not stored", i)
		}
	}
}

// TestCertificateParameters checks key type and lifetimes.
func TestCertificateParameters(t *testing.T) {
	at := time.Now()
	p := ensure(t, envtest.UniqueName("cert"), []string{"localhost"}, at)
	for _, tc := range []struct {
		pem  []byte
		life time.Duration
		isCA bool
	}{{p.ca, caValidity, true}, {p.cert, servingValidity, false}} {
		b, _ := pem.Decode(tc.pem)
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if cert.PublicKeyAlgorithm != x509.ECDSA || cert.IsCA != tc.isCA {
			t.Errorf("%s: key %s, CA %v", cert.Subject.CommonName, cert.PublicKeyAlgorithm, cert.IsCA)
		}
		if d := cert.NotAfter.Sub(at); d < tc.life-time.Minute || d > tc.life+time.Minute {
			t.Errorf("%s: valid for %s, want %s", cert.Subject.CommonName, d, tc.life)
		}
	}
}
