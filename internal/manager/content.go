package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/content"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/tenant"
	"github.com/rukpak/rukpak/internal/upload"
)

// addContentServer runs the content server on every replica (each serves
// what its own store holds, unpacking a Bundle's pinned sources when
// another replica unpacked it, and each takes uploads, which it writes as
// chunks into rukpak-system) when opts.ContentBindAddress is set.
func addContentServer(mgr manager.Manager, cfg *rest.Config, unpacker *content.Unpacker, opts Options) error {
	st := unpacker.Store()
	if opts.ContentBindAddress == "" {
		return nil
	}
	if opts.ContentURL == "" {
		return fmt.Errorf("--content-url is required with --content-bind-address")
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("creating client for token reviews: %w", err)
	}
	uploads := upload.NewStore(mgr.GetClient(), mgr.GetAPIReader(), v1alpha2.SystemNamespace)
	srv := &http.Server{
		Addr: opts.ContentBindAddress,
		Handler: contentserver.New(st, mgr.GetClient(), kube,
			contentserver.WithUploads(uploads, 0, 0),
			// A Bundle another replica unpacked is unpacked here when
			// asked for, so that every replica answers.
			contentserver.WithFill(func(ctx context.Context, b *v1alpha2.Bundle) (string, error) {
				// For the Bundle's tenant, within its share.
				owner, err := tenant.OfBundle(ctx, mgr.GetClient(), b)
				if err != nil {
					return "", err
				}
				return unpacker.Ensure(tenant.WithContext(ctx, owner.Tenant), b.Name, b.ResolvedSources(), b.ContentDigest())
			}),
			contentserver.WithLogger(mgr.GetLogger().WithName("content-server"))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	run := manager.RunnableFunc(func(ctx context.Context) error {
		ln, err := net.Listen("tcp", opts.ContentBindAddress)
		if err != nil {
			return fmt.Errorf("content server: %w", err)
		}
		go func() {
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
		}()
		if opts.ContentTLSCertFile != "" {
			err = srv.ServeTLS(ln, opts.ContentTLSCertFile, opts.ContentTLSKeyFile)
		} else {
			err = srv.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("content server: %w", err)
	})
	if err := mgr.Add(everyReplica{run}); err != nil {
		return fmt.Errorf("adding content server: %w", err)
	}
	return nil
}

// everyReplica runs a runnable whether or not this replica is the leader.
type everyReplica struct{ manager.RunnableFunc }

// NeedLeaderElection reports false: every replica serves.
func (everyReplica) NeedLeaderElection() bool { return false }
