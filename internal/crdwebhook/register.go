package crdwebhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// CheckInterval is how often a running manager re-checks the certificate
// and the webhook configuration.
var CheckInterval = 12 * time.Hour

// registrar keeps the certificate files and the webhook configuration up to
// date once the webhook server answers.
type registrar struct {
	client client.Client
	opts   Options
}

var (
	_ manager.Runnable               = (*registrar)(nil)
	_ manager.LeaderElectionRunnable = (*registrar)(nil)
)

// NeedLeaderElection is false: every replica serves the webhook and keeps
// its own certificate files current; writes are idempotent.
func (*registrar) NeedLeaderElection() bool { return false }

// Start waits for the webhook server, registers the configuration and then
// re-checks it every CheckInterval until ctx ends.
func (r *registrar) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("crd-webhook")
	caPEM, err := r.ensureFiles(ctx)
	if err != nil {
		return err
	}
	if err := waitForTLS(ctx, r.opts.BindAddress, caPEM, r.opts.hosts()[0]); err != nil {
		return err
	}
	for {
		if err := r.register(ctx, caPEM); err != nil {
			return err
		}
		log.Info("registered CRD upgrade-safety webhook", "configuration", ConfigurationName)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(CheckInterval):
		}
		if caPEM, err = r.ensureFiles(ctx); err != nil {
			return err
		}
	}
}

// ensureFiles ensures the certificate and writes it to opts.CertDir,
// returning the CA's PEM.
func (r *registrar) ensureFiles(ctx context.Context) ([]byte, error) {
	return ensureFiles(ctx, r.client, r.opts)
}

func ensureFiles(ctx context.Context, c client.Client, opts Options) ([]byte, error) {
	cert, key, ca, err := EnsureCertificate(ctx, c, opts.Namespace, SecretName, opts.hosts())
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := writeIfChanged(filepath.Join(opts.CertDir, name), data); err != nil {
			return nil, err
		}
	}
	return ca, nil
}

// writeIfChanged writes data to path unless it already holds it.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// waitForTLS polls addr until it completes a TLS handshake with a
// certificate that caPEM's CA signed for serverName.
func waitForTLS(ctx context.Context, addr string, caPEM []byte, serverName string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("webhook address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	dialer := &tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}}
	for {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := dialer.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the webhook server at %s: %w (last error: %w)", addr, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// register creates or updates the ValidatingWebhookConfiguration.
func (r *registrar) register(ctx context.Context, caPEM []byte) error {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName}}
	want := webhookFor(r.opts, caPEM)
	if _, err := controllerutil.CreateOrUpdate(ctx, r.client, cfg, func() error {
		cfg.Webhooks = []admissionregistrationv1.ValidatingWebhook{want}
		return nil
	}); err != nil {
		return fmt.Errorf("registering ValidatingWebhookConfiguration %s: %w", ConfigurationName, err)
	}
	return nil
}

// webhookFor builds the one webhook of the configuration.
func webhookFor(opts Options, caPEM []byte) admissionregistrationv1.ValidatingWebhook {
	clientConfig := admissionregistrationv1.WebhookClientConfig{CABundle: caPEM}
	if opts.ServiceName != "" {
		clientConfig.Service = &admissionregistrationv1.ServiceReference{
			Namespace: opts.Namespace,
			Name:      opts.ServiceName,
			Path:      ptr.To(Path),
			Port:      ptr.To[int32](ServicePort),
		}
	} else {
		clientConfig.URL = ptr.To("https://" + opts.AdvertiseAddress + Path)
	}
	return admissionregistrationv1.ValidatingWebhook{
		Name:         WebhookName,
		ClientConfig: clientConfig,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{"apiextensions.k8s.io"},
				APIVersions: []string{"v1"},
				Resources:   []string{"customresourcedefinitions"},
				Scope:       ptr.To(admissionregistrationv1.AllScopes),
			},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key:      v1alpha2.LabelOwnerKind,
			Operator: metav1.LabelSelectorOpExists,
		}}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](10),
	}
}
