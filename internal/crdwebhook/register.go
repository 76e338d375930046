package crdwebhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
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
	// registered is set once the webhook and the conversion of rukpak's
	// CRDs point at this replica's server.
	registered atomic.Bool
}

// ready is a readyz check: the replica is not ready until its webhooks
// are registered, so that nothing writes v1alpha1 objects before they
// can be converted.
func (r *registrar) ready(*http.Request) error {
	if !r.registered.Load() {
		return fmt.Errorf("the CRD and conversion webhooks are not registered yet")
	}
	return nil
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
		if err := r.registerConversion(ctx, caPEM); err != nil {
			return err
		}
		r.registered.Store(true)
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

// ConvertedCRDs are rukpak's own CRDs whose versions the conversion
// webhook converts.
var ConvertedCRDs = []string{"bundles.core.rukpak.io", "bundledeployments.core.rukpak.io"}

// V1alpha1 is the version of rukpak's API that NoV1alpha1 stops serving.
const V1alpha1 = "v1alpha1"

// registerConversion points the conversion of rukpak's own CRDs at the
// webhook server, with its CA, and serves v1alpha1 or not as the options
// say, when they do not already.
func (r *registrar) registerConversion(ctx context.Context, caPEM []byte) error {
	want := conversionFor(r.opts, caPEM)
	for _, name := range ConvertedCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
		}
		changed := servedAsOptions(crd, !r.opts.NoV1alpha1)
		if equality.Semantic.DeepEqual(crd.Spec.Conversion, want) && !changed {
			continue
		}
		crd.Spec.Conversion = want
		if err := r.client.Update(ctx, crd); err != nil {
			return fmt.Errorf("registering the conversion webhook of %s: %w", name, err)
		}
	}
	return nil
}

// servedAsOptions sets whether crd serves v1alpha1, and reports whether
// that changed it.
func servedAsOptions(crd *apiextensionsv1.CustomResourceDefinition, serve bool) bool {
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Name == V1alpha1 && v.Served != serve {
			v.Served = serve
			return true
		}
	}
	return false
}

// conversionFor is the conversion of rukpak's CRDs through the webhook.
func conversionFor(opts Options, caPEM []byte) *apiextensionsv1.CustomResourceConversion {
	cc := &apiextensionsv1.WebhookClientConfig{CABundle: caPEM}
	if opts.ServiceName != "" {
		cc.Service = &apiextensionsv1.ServiceReference{Namespace: opts.Namespace, Name: opts.ServiceName, Path: ptr.To(ConvertPath), Port: ptr.To[int32](ServicePort)}
	} else {
		cc.URL = ptr.To("https://" + opts.AdvertiseAddress + ConvertPath)
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: []string{"v1"}},
	}
}
