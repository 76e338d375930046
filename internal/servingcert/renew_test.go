package servingcert

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"
)

// opts are short lifetimes: CA 10h, serving 4h, renew 1h before, overlap
// 10m.
var opts = Options{CAValidity: 10 * time.Hour, ServingValidity: 4 * time.Hour, RenewBefore: time.Hour, Overlap: 10 * time.Minute}

var hosts = Hosts("svc", "ns")

// must renews data at t and fails the test on error.
func must(t *testing.T, data map[string][]byte, at time.Time) State {
	t.Helper()
	st, err := Renew(data, hosts, "test-ca", at, opts)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	return st
}

// checkServes checks that st's serving certificate verifies against st's
// trusted CAs for every host at at.
func checkServes(t *testing.T, st State, at time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(st.Data[KeyCA]) {
		t.Fatal("no trusted CA")
	}
	kp, err := ParseKeyPair(st.Data[KeyCert], st.Data[KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if _, err := kp.Cert.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: at}); err != nil {
			t.Errorf("host %s: %v", h, err)
		}
	}
}

func count(t *testing.T, pemData []byte) int {
	t.Helper()
	certs, err := ParseCerts(pemData)
	if err != nil {
		t.Fatal(err)
	}
	return len(certs)
}

func TestRenew(t *testing.T) {
	t0 := time.Now()
	first := must(t, nil, t0)
	tests := []struct {
		name string
		data map[string][]byte
		at   time.Time
		// wantChanged, wantSameCert, wantSameCA (first CA still newest)
		// and wantCAs (trusted) describe the result.
		wantChanged, wantSameCert, wantSameCA bool
		wantCAs                               int
	}{
		{name: "keeps good data", data: first.Data, at: t0.Add(time.Hour), wantSameCert: true, wantSameCA: true, wantCAs: 1},
		{name: "renews serving near expiry with the same CA", data: first.Data, at: t0.Add(3*time.Hour + time.Minute), wantChanged: true, wantSameCA: true, wantCAs: 1},
		{name: "adds a new CA near CA expiry", data: first.Data, at: t0.Add(9*time.Hour + time.Minute), wantChanged: true, wantCAs: 2},
		{name: "starts over after CA expiry", data: first.Data, at: t0.Add(11 * time.Hour), wantChanged: true, wantCAs: 1},
		{name: "starts over when deleted", data: nil, at: t0, wantChanged: true, wantCAs: 1},
		{name: "starts over on garbage", data: map[string][]byte{KeyCA: []byte("x"), KeyCAKey: []byte("y")}, at: t0, wantChanged: true, wantCAs: 1},
		{name: "renews serving for other hosts", data: withHosts(t, first.Data, t0), at: t0, wantChanged: true, wantSameCA: true, wantCAs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := must(t, tt.data, tt.at)
			if st.Changed != tt.wantChanged {
				t.Errorf("Changed = %v, want %v", st.Changed, tt.wantChanged)
			}
			if same := bytes.Equal(st.Data[KeyCert], first.Data[KeyCert]); same != tt.wantSameCert {
				t.Errorf("same serving certificate = %v, want %v", same, tt.wantSameCert)
			}
			if same := bytes.Equal(st.Data[KeyCAKey], first.Data[KeyCAKey]); same != tt.wantSameCA {
				t.Errorf("same CA = %v, want %v", same, tt.wantSameCA)
			}
			if n := count(t, st.Data[KeyCA]); n != tt.wantCAs {
				t.Errorf("trusted CAs = %d, want %d", n, tt.wantCAs)
			}
			if !bytes.Equal(st.Data[KeyCA], st.Data[KeyOLMCA]) {
				t.Errorf("%s differs from %s", KeyOLMCA, KeyCA)
			}
			checkServes(t, st, tt.at)
			if again := must(t, st.Data, tt.at); again.Changed {
				t.Error("renewing the result again changed it")
			}
		})
	}
}

// withHosts returns data whose serving certificate is for other hosts.
func withHosts(t *testing.T, data map[string][]byte, at time.Time) map[string][]byte {
	t.Helper()
	st, err := Renew(data, []string{"other"}, "test-ca", at, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st.Data
}

// TestRenewRotation walks a CA rotation: at every step the serving
// certificate verifies against both the trusted CAs written before (what
// clients still hold) and those written now.
func TestRenewRotation(t *testing.T) {
	t0 := time.Now()
	st := must(t, nil, t0)
	at := t0
	var steps []string
	for i := 0; i < 40 && at.Before(t0.Add(30*time.Hour)); i++ {
		if !st.Next.After(at) {
			t.Fatalf("step %d: Next %v is not after %v", i, st.Next, at)
		}
		at = st.Next.Add(time.Second)
		next := must(t, st.Data, at)
		// Clients hold st's CAs until next is applied; next's serving
		// certificate must be trusted by them... unless it is signed by a
		// CA they learned in st.
		checkServes(t, State{Data: map[string][]byte{KeyCA: st.Data[KeyCA], KeyCert: next.Data[KeyCert], KeyKey: next.Data[KeyKey]}}, at)
		checkServes(t, next, at)
		steps = append(steps, at.Sub(t0).Round(time.Minute).String())
		st = next
	}
	if len(steps) < 4 {
		t.Errorf("only %d renewals in 30h: %v", len(steps), steps)
	}
}
