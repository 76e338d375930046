package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/internal/objdiff"
	"github.com/rukpak/rukpak/internal/ui"
)

func init() { register(newUICmd) }

// uiOptions are the flags of rukpakctl ui.
type uiOptions struct {
	diffOptions
	address     string
	readOnly    bool
	open        bool
	allowRemote bool
}

func newUICmd() *cobra.Command {
	o := &uiOptions{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web page of BundleDeployments, their revisions, reviews and approvals, as you",
		Long: `Serve, on loopback, a web page of the cluster's BundleDeployments as the
user of the kubeconfig sees them: an overview (held and failed first,
filters by state, class, namespace and text), one BundleDeployment
(conditions, sources and pins, its revisions and events as a timeline),
and the review of a held revision (objects with side-by-side diffs, RBAC
gained and lost, webhooks, APIServices and CRDs) with an Approve button
that does what rukpakctl approve does. Pages update live from watches.

Every request goes to the API server with your credentials: what you see
and may do is what your RBAC allows; the button shows only when a
SelfSubjectAccessReview says you may approve, and a refusal shows the API
server's message. The URL printed holds a random token of this run;
requests without it, with another Host header, or POSTs from another
origin or without the page's CSRF token are refused. --read-only writes
nothing.`,
		Example: `  rukpakctl ui
  rukpakctl ui --read-only --address 127.0.0.1:8089 --open=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context (default the current one)")
	fs.StringVar(&o.address, "address", "127.0.0.1:0", "host:port to listen on (port 0: any free port)")
	fs.BoolVar(&o.readOnly, "read-only", false, "show no Approve button and refuse approvals")
	fs.BoolVar(&o.open, "open", true, "open the page in a browser, where one can be started (xdg-open with a display)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow --address to be other than loopback (anyone who has the URL acts as you)")
	// The review's diffs read a revision's content from the manager's
	// content server, as rukpakctl diff NAME does.
	o.cf.add(fs)
	return cmd
}

// run serves the page until ctx ends.
func (o *uiOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := checkLoopback(o.address, o.allowRemote); err != nil {
		return err
	}
	cl, err := o.dial()
	if err != nil {
		return err
	}
	token, err := ui.NewToken()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.address, err)
	}
	defer ln.Close()
	// The watches' cache logs through controller-runtime's logger, which
	// otherwise warns that it was never set.
	ctrllog.SetLogger(logr.Discard())
	hub := &ui.Hub{}
	synced, err := ui.Watch(ctx, cl.cfg, scheme(), hub)
	if err != nil {
		return err
	}
	if !synced {
		fmt.Fprintln(stderr, "note: BundleDeployments and Bundles could not be watched (may you list and watch them?): pages are not live")
	}
	srv, err := ui.New(ui.Options{
		Client: cl.client, Token: token, Hosts: ui.LoopbackHosts(ln.Addr().String()), ReadOnly: o.readOnly,
		Differ: o.differ(cl), Changes: hub, Cluster: cl.cfg.Host,
	})
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + srv.Path()
	fmt.Fprintln(stdout, url)
	fmt.Fprintln(stderr, "rukpakctl ui: serving the page above as the kubeconfig's user; Ctrl-C stops it")
	if o.open {
		openBrowser(url)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// differ diffs a BundleDeployment on cl by name as rukpakctl diff NAME
// does; its notes are dropped.
func (o *uiOptions) differ(cl *cluster) ui.Differ {
	return func(ctx context.Context, name string) ([]objdiff.Object, error) {
		bd, err := getBundleDeployment(ctx, cl.client, name)
		if err != nil {
			return nil, err
		}
		var notes bytes.Buffer
		return o.objectsOf(ctx, &notes, cl, input{bd: bd, onCluster: true})
	}
}

// checkLoopback refuses an address other than loopback unless allowed.
func checkLoopback(address string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("--address %q: %w", address, err)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) || allowRemote {
		return nil
	}
	return fmt.Errorf("--address %q is not a loopback address: anyone who reaches it with the URL acts as you; pass --allow-remote to serve it anyway", address)
}

// openBrowser starts the desktop's opener on url (open on macOS,
// xdg-open elsewhere when there is a display to show it on); it does not
// wait.
func openBrowser(url string) {
	name := "xdg-open"
	switch {
	case runtime.GOOS == "darwin":
		name = "open"
	case os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "":
		return
	}
	if path, err := exec.LookPath(name); err == nil {
		cmd := exec.Command(path, url)
		if cmd.Start() == nil {
			go func() { _ = cmd.Wait() }()
		}
	}
}
