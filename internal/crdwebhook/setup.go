package crdwebhook

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// The certificate Secret is rukpak's own; the configuration is cluster-wide.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update,namespace=rukpak-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;create;update
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundledeployments,verbs=get
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=bundles.core.rukpak.io;bundledeployments.core.rukpak.io,verbs=update

// setupTimeout bounds the synchronous certificate work of Setup.
const setupTimeout = 30 * time.Second

// Setup adds the CRD upgrade-safety webhook to mgr: it ensures the
// certificate and writes its files now, so that the webhook server it adds
// starts with them, and adds a Runnable that registers the webhook
// configuration once the server answers.
func Setup(mgr manager.Manager, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	// The manager's cache is not running yet: read and write directly.
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating crd webhook client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := ensureFiles(ctx, c, opts); err != nil {
		return fmt.Errorf("preparing crd webhook certificate: %w", err)
	}
	host, portStr, _ := net.SplitHostPort(opts.BindAddress)
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("crd webhook bind address %q: port: %w", opts.BindAddress, err)
	}
	server := webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: opts.CertDir})
	server.Register(Path, &admission.Webhook{Handler: &Handler{Reader: mgr.GetAPIReader(), TrustedUsers: opts.TrustedUsers}})
	// The same server, and certificate, convert rukpak's own kinds.
	server.Register(ConvertPath, conversion.NewWebhookHandler(mgr.GetScheme(), conversion.NewRegistry()))
	if err := mgr.Add(server); err != nil {
		return fmt.Errorf("adding crd webhook server: %w", err)
	}
	reg := &registrar{client: c, opts: opts}
	if err := mgr.Add(reg); err != nil {
		return fmt.Errorf("adding crd webhook registration: %w", err)
	}
	if err := mgr.AddReadyzCheck("crd-webhook", reg.ready); err != nil {
		return fmt.Errorf("adding crd webhook readiness check: %w", err)
	}
	return nil
}
