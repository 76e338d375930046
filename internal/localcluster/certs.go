package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// certificate validity: long enough that a developer's cluster never
// expires under them.
const certValidity = 10 * 365 * 24 * time.Hour

// pki holds the file names of the generated key material.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// CA, serving pair, service-account pair and admin client pair.
const (
	caCert         = "ca.crt"
	caKey          = "ca.key"
	servingCert    = "apiserver.crt"
	servingKey     = "apiserver.key"
	saPublicKey    = "sa.pub"
	saPrivateKey   = "sa.key"
	adminCert      = "admin.crt"
	adminKey       = "admin.key"
	kubeconfigName = "kubeconfig"
	contextName    = "rukpak-local"
	// tokenAuthFile is the API server's static tokens: the manager's.
	tokenAuthFile = "tokens.csv"
	// managerKubeconfigName is the manager's kubeconfig, next to the
	// admin's: the manager's user with a bearer token.
	managerKubeconfigName = "manager-kubeconfig"
)

// adminUser and adminGroup are who the admin kubeconfig acts as.
const (
	adminUser  = "rukpak-admin"
	adminGroup = "system:masters"
)

// managerUser and managerGroups are who the manager acts as: the user name
// of the release's ServiceAccount (rukpak-system/rukpak-manager), which
// config/policy recognises as the manager, with that ServiceAccount's
// groups and, as the admin, system:masters (the local cluster's manager
// installs the examples without spec.serviceAccount as itself, with every
// right).
const (
	managerUser   = "system:serviceaccount:rukpak-system:rukpak-manager"
	managerGroups = "system:masters,system:serviceaccounts,system:serviceaccounts:rukpak-system"
)

// generatePKI writes a fresh CA, an API server serving certificate for
// 127.0.0.1 and localhost, a service-account key pair and an admin client
// certificate (O=system:masters) into dir. Keys are ECDSA P-256, which every
// component accepts and which is quick to generate.
func generatePKI(dir string) (pki, error) {
	p := pki{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, fmt.Errorf("creating %s: %w", dir, err)
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock skew
	ca, caPriv, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "rukpak-local-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, nil)
	if err != nil {
		return p, fmt.Errorf("generating CA: %w", err)
	}
	if err := writePair(p.path(caCert), p.path(caKey), ca, caPriv); err != nil {
		return p, err
	}
	serving, servingPriv, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now,
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}, ca, caPriv)
	if err != nil {
		return p, fmt.Errorf("generating API server certificate: %w", err)
	}
	if err := writePair(p.path(servingCert), p.path(servingKey), serving, servingPriv); err != nil {
		return p, err
	}
	admin, adminPriv, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: adminUser, Organization: []string{adminGroup}},
		NotBefore:   now,
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, caPriv)
	if err != nil {
		return p, fmt.Errorf("generating admin certificate: %w", err)
	}
	if err := writePair(p.path(adminCert), p.path(adminKey), admin, adminPriv); err != nil {
		return p, err
	}
	saPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, fmt.Errorf("generating service-account key: %w", err)
	}
	if err := writeKey(p.path(saPrivateKey), saPriv); err != nil {
		return p, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saPriv.Public())
	if err != nil {
		return p, fmt.Errorf("encoding service-account public key: %w", err)
	}
	if err := writePEM(p.path(saPublicKey), "PUBLIC KEY", pub, 0o644); err != nil {
		return p, err
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return p, fmt.Errorf("generating the manager's token: %w", err)
	}
	line := fmt.Sprintf("%s,%s,%s,\"%s\"\n", hex.EncodeToString(token), managerUser, managerUser, managerGroups)
	if err := os.WriteFile(p.path(tokenAuthFile), []byte(line), 0o600); err != nil {
		return p, fmt.Errorf("writing %s: %w", tokenAuthFile, err)
	}
	return p, nil
}

// managerToken returns the manager's bearer token from the API server's
// token file.
func (p pki) managerToken() (string, error) {
	data, err := os.ReadFile(p.path(tokenAuthFile))
	if err != nil {
		return "", fmt.Errorf("reading the manager's token: %w", err)
	}
	token, _, ok := strings.Cut(string(data), ",")
	if !ok || token == "" {
		return "", fmt.Errorf("reading the manager's token: %s has no token", tokenAuthFile)
	}
	return token, nil
}

// newCert creates a certificate from template signed by parent (self-signed
// when parent is nil).
func newCert(template, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generating serial number: %w", err)
	}
	template.SerialNumber = serial
	if parent == nil {
		parent, parentKey = template, priv
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, priv.Public(), parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing certificate: %w", err)
	}
	return cert, priv, nil
}

func writePair(certPath, keyPath string, cert *x509.Certificate, key *ecdsa.PrivateKey) error {
	if err := writePEM(certPath, "CERTIFICATE", cert.Raw, 0o644); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding key for %s: %w", path, err)
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeManagerKubeconfig writes the manager's kubeconfig for server to
// path: managerUser, authenticated by a bearer token, as a manager in a
// cluster is by its ServiceAccount's token (the API server looks a static
// token up, and caches a ServiceAccount token's verdict, where it checks a
// client certificate's signature on every request).
func writeManagerKubeconfig(path, server string, p pki) error {
	token, err := p.managerToken()
	if err != nil {
		return err
	}
	return writeKubeconfigAs(path, server, p, &clientcmdapi.AuthInfo{Token: token})
}

// writeKubeconfig writes an admin kubeconfig for server to path, with the
// CA and client pair embedded so the file stands alone.
func writeKubeconfig(path, server string, p pki) error {
	cert, err := os.ReadFile(p.path(adminCert))
	if err != nil {
		return fmt.Errorf("reading admin certificate: %w", err)
	}
	key, err := os.ReadFile(p.path(adminKey))
	if err != nil {
		return fmt.Errorf("reading admin key: %w", err)
	}
	return writeKubeconfigAs(path, server, p, &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key})
}

// writeKubeconfigAs writes a kubeconfig for server to path that trusts
// the cluster's CA and authenticates with auth.
func writeKubeconfigAs(path, server string, p pki, auth *clientcmdapi.AuthInfo) error {
	ca, err := os.ReadFile(p.path(caCert))
	if err != nil {
		return fmt.Errorf("reading CA: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[contextName] = auth
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	cfg.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
