package crdwebhook

import (
	"cmp"
	"fmt"
	"net"
	"os"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

const (
	// Path is where the webhook server serves Handler.
	Path = "/validate-crd-upgrade"
	// ConvertPath is where it serves the conversion webhook of rukpak's
	// own CRDs (core.rukpak.io v1alpha1 to and from v1alpha2).
	ConvertPath = "/convert"
	// ConfigurationName is the name of the ValidatingWebhookConfiguration.
	ConfigurationName = "rukpak-crd-upgrade-safety"
	// WebhookName is the name of the one webhook in the configuration.
	WebhookName = "crd-upgrade-safety.core.rukpak.io"
	// SecretName is the Secret holding the CA and serving certificate.
	SecretName = "rukpak-crd-webhook-cert"
	// ServicePort is the port of the Service in service mode.
	ServicePort = 443
)

// Options configure Setup.
type Options struct {
	// BindAddress is the "host:port" the webhook server listens on.
	BindAddress string
	// AdvertiseAddress is the "host:port" the API server calls when
	// ServiceName is empty; it defaults to BindAddress, with 127.0.0.1 for
	// an empty or unspecified host.
	AdvertiseAddress string
	// ServiceName, when set, makes the API server call the Service of that
	// name in Namespace on port ServicePort instead of AdvertiseAddress.
	ServiceName string
	// CertDir receives tls.crt and tls.key for the webhook server; it
	// defaults to a new temporary directory.
	CertDir string
	// Namespace holds the certificate Secret and the Service; it defaults
	// to rukpak-system.
	Namespace string
	// TrustedUsers are user names whose updates are never checked.
	TrustedUsers []string
	// NoV1alpha1 stops serving core.rukpak.io/v1alpha1 (the conversion
	// stays registered, for objects stored as v1alpha1 before).
	NoV1alpha1 bool
}

// withDefaults fills in the defaults and checks the addresses.
func (o Options) withDefaults() (Options, error) {
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		return o, fmt.Errorf("crd webhook bind address %q: %w", o.BindAddress, err)
	}
	if o.AdvertiseAddress == "" {
		host, port, _ := net.SplitHostPort(o.BindAddress)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		o.AdvertiseAddress = net.JoinHostPort(host, port)
	}
	if _, _, err := net.SplitHostPort(o.AdvertiseAddress); err != nil {
		return o, fmt.Errorf("crd webhook advertise address %q: %w", o.AdvertiseAddress, err)
	}
	o.Namespace = cmp.Or(o.Namespace, v1alpha2.SystemNamespace)
	if o.CertDir == "" {
		dir, err := os.MkdirTemp("", "rukpak-crd-webhook-")
		if err != nil {
			return o, fmt.Errorf("creating crd webhook cert dir: %w", err)
		}
		o.CertDir = dir
	}
	return o, nil
}

// hosts are the names the serving certificate is issued for.
func (o Options) hosts() []string {
	if o.ServiceName != "" {
		svc := o.ServiceName + "." + o.Namespace
		return []string{svc + ".svc", svc + ".svc.cluster.local", svc, o.ServiceName}
	}
	host, _, _ := net.SplitHostPort(o.AdvertiseAddress)
	return []string{host}
}
