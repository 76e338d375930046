package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/localcluster"
	"github.com/rukpak/rukpak/internal/upload"
)

func init() { register(newRunCmd) }

// runOptions are the flags of `rukpakctl run`.
type runOptions struct {
	kubeconfig string
	context    string
	class      string
	namespace  string
	sa         string
	wait       bool
	timeout    time.Duration
	cf         contentFlags
}

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [NAME] DIR",
		Short: "Upload a directory and install it as BundleDeployment NAME",
		Long: `Pack DIR into a deterministic .tar.gz, upload it to the manager's content
server (which stores it as content-addressed chunks in rukpak-system: no
write access to ConfigMaps there is needed) and create BundleDeployment NAME
with it as its upload source, or point an existing NAME at it. Running again
with unchanged content changes nothing; changed content makes a new revision.
Progress goes to stderr, the outcome and the Installed condition to stdout.
Without NAME, the BundleDeployment is named after DIR (its base name,
lower-cased, other characters than letters, digits and '-' made '-').

The upload is authenticated with a token for audience ` + contentserver.Audience + `:
--token, or one rukpakctl requests for --token-for NAMESPACE/NAME, by default
for the BundleDeployment's ServiceAccount (spec.serviceAccount in its
installNamespace) or, on the local cluster (rukpakctl local up), for the
ServiceAccount ` + localcluster.Uploader.String() + ` it provides for its admin.
That identity needs create on the virtual resource uploads in API group
core.rukpak.io (ClusterRole rukpak-uploader). The token is sent only to the
manager's content server (--content-server), never the kubeconfig's
credentials.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, dir := "", args[len(args)-1]
			if len(args) == 2 {
				name = args[0]
			} else {
				var err error
				if name, err = nameFromDir(dir); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "BundleDeployment %s (named after %s)\n", name, dir)
			}
			if o.namespace == "" {
				o.namespace = name
			}
			return o.run(cmd, name, dir)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context (default the current one)")
	f.StringVar(&o.class, "class", "core-rukpak-io-plain", "ProvisionerClass of a new BundleDeployment")
	f.StringVar(&o.namespace, "namespace", "", "installNamespace of a new BundleDeployment (default NAME)")
	f.StringVar(&o.sa, "service-account", "", "spec.serviceAccount of a new BundleDeployment: it is installed as this ServiceAccount of installNamespace")
	f.BoolVar(&o.wait, "wait", true, "wait until the new revision is installed")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long --wait waits")
	o.cf.add(f)
	return cmd
}

// run uploads dir and points BundleDeployment name at it.
func (o *runOptions) run(cmd *cobra.Command, name, dir string) error {
	ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	cfg, err := loadConfig(o.kubeconfig, o.context)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return fmt.Errorf("creating client for %s: %w", cfg.Host, err)
	}
	base, err := o.cf.base(cfg)
	if err != nil {
		return err
	}
	a, err := upload.Pack(dir)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	fmt.Fprintf(stderr, "packed %s: %s (%s compressed)\n", dir, a.Digest, size(a.Size))

	uploader, exists, err := o.uploader(ctx, c, name)
	if err != nil {
		return err
	}
	if uploader == nil && !o.cf.hasToken() {
		if uploader, err = o.defaultUploader(cfg, name, dir, exists); err != nil {
			return err
		}
	}
	token, err := o.cf.bearer(ctx, cfg, uploader)
	if err != nil {
		return err
	}
	res, err := putUpload(ctx, base, token, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "uploaded %s in %d chunk(s) through %s\n", size(res.Size), res.Chunks, base)

	bd, changed, err := o.apply(ctx, c, cmd, name, a.Digest)
	if err != nil {
		return err
	}
	if changed && o.wait {
		fmt.Fprintf(stderr, "waiting up to %s for BundleDeployment %s (generation %d) to be installed\n", o.timeout, name, bd.Generation)
		if bd, err = waitInstalled(ctx, c, name, bd.Generation, o.timeout); err != nil {
			printInstalled(stdout, bd)
			return err
		}
	}
	printInstalled(stdout, bd)
	return nil
}

// uploader returns the ServiceAccount a token is requested for when
// neither --token nor --token-for is given: the install identity of
// BundleDeployment name if it exists, else the one --service-account gives
// the new one; nil when there is none (see defaultUploader). It also
// reports whether the BundleDeployment exists.
func (o *runOptions) uploader(ctx context.Context, c client.Client, name string) (*types.NamespacedName, bool, error) {
	bd := &v1alpha2.BundleDeployment{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, bd)
	switch {
	case apierrors.IsNotFound(err):
		if o.sa == "" {
			return nil, false, nil
		}
		return &types.NamespacedName{Namespace: o.namespace, Name: o.sa}, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	if _, err := uploadSource(bd); err != nil {
		return nil, true, fmt.Errorf("BundleDeployment %s: %w", name, err)
	}
	if bd.Spec.ServiceAccount == nil {
		return nil, true, nil
	}
	return &types.NamespacedName{Namespace: bd.Spec.InstallNamespace, Name: bd.Spec.ServiceAccount.Name}, true, nil
}

// apply creates BundleDeployment name with the upload digest, or points its
// upload source at digest. It reports whether it wrote anything.
func (o *runOptions) apply(ctx context.Context, c client.Client, cmd *cobra.Command, name, digest string) (*v1alpha2.BundleDeployment, bool, error) {
	stdout := cmd.OutOrStdout()
	bd := &v1alpha2.BundleDeployment{}
	var old string
	created := false
	// A BundleDeployment created or changed meanwhile is read again.
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, retriable, func() error {
		old, created = "", false
		err := c.Get(ctx, client.ObjectKey{Name: name}, bd)
		if apierrors.IsNotFound(err) {
			bd, created = o.newBundleDeployment(name, digest), true
			return c.Create(ctx, bd)
		}
		if err != nil {
			return err
		}
		i, err := uploadSource(bd)
		if err != nil {
			return err
		}
		if old = bd.Spec.Sources[i].Upload.Digest; old == digest {
			return nil
		}
		bd.Spec.Sources[i].Upload.Digest = digest
		return c.Update(ctx, bd)
	})
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("BundleDeployment %s: %w", name, err)
	case created:
		fmt.Fprintf(stdout, "created BundleDeployment %s: %s\n", name, digest)
	case old == digest:
		fmt.Fprintf(stdout, "unchanged: %s already runs %s\n", name, digest)
		return bd, false, nil
	default:
		fmt.Fprintf(stdout, "updated BundleDeployment %s: %s (was %s)\n", name, digest, old)
	}
	o.warnIgnored(cmd, bd)
	return bd, true, nil
}

func (o *runOptions) newBundleDeployment(name, digest string) *v1alpha2.BundleDeployment {
	var sa *v1alpha2.ServiceAccountReference
	if o.sa != "" {
		sa = &v1alpha2.ServiceAccountReference{Name: o.sa}
	}
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: o.class,
			InstallNamespace:     o.namespace,
			ServiceAccount:       sa,
			Sources: []v1alpha2.BundleSource{{
				Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: digest},
			}},
		},
	}
}

// warnIgnored warns when --class, --namespace or --service-account differ
// from an existing BundleDeployment's: run changes only the upload digest.
func (o *runOptions) warnIgnored(cmd *cobra.Command, bd *v1alpha2.BundleDeployment) {
	f := cmd.Flags()
	if f.Changed("class") && o.class != bd.Spec.ProvisionerClassName {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: --class %s ignored: %s keeps class %s\n", o.class, bd.Name, bd.Spec.ProvisionerClassName)
	}
	if f.Changed("namespace") && o.namespace != bd.Spec.InstallNamespace {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: --namespace %s ignored: %s keeps installNamespace %s\n", o.namespace, bd.Name, bd.Spec.InstallNamespace)
	}
	if f.Changed("service-account") && (bd.Spec.ServiceAccount == nil || o.sa != bd.Spec.ServiceAccount.Name) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: --service-account %s ignored: %s keeps its spec.serviceAccount\n", o.sa, bd.Name)
	}
}

// uploadSource returns the index of the one upload source of bd.
func uploadSource(bd *v1alpha2.BundleDeployment) (int, error) {
	idx := -1
	for i, s := range bd.Spec.Sources {
		if s.Type != v1alpha2.SourceTypeUpload || s.Upload == nil {
			continue
		}
		if idx >= 0 {
			return 0, errors.New("it has several upload sources: `rukpakctl run` does not know which to replace")
		}
		idx = i
	}
	if idx < 0 {
		return 0, errors.New("it exists without an upload source: `rukpakctl run` replaces only upload sources")
	}
	return idx, nil
}

// terminal are the reasons of False Unpacked and Installed conditions that
// retrying will not fix.
var terminal = []string{
	v1alpha2.ReasonSourceNotFound, v1alpha2.ReasonSourceMutable, v1alpha2.ReasonDigestMismatch,
	v1alpha2.ReasonSourceConflict, v1alpha2.ReasonUnsupportedSource, v1alpha2.ReasonInvalidContent,
	v1alpha2.ReasonValidationFailed, v1alpha2.ReasonCollision, v1alpha2.ReasonMissingPermissions,
	v1alpha2.ReasonRolledBack,
}

// waitInstalled waits until BundleDeployment name is Installed for
// generation gen (or later), and fails early when its Unpacked or Installed
// condition reports a terminal failure for it.
func waitInstalled(ctx context.Context, c client.Client, name string, gen int64, timeout time.Duration) (*v1alpha2.BundleDeployment, error) {
	bd := &v1alpha2.BundleDeployment{}
	var failed, lastErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if lastErr = c.Get(ctx, client.ObjectKey{Name: name}, bd); lastErr != nil {
			return false, nil //nolint:nilerr // retried until the timeout, then reported
		}
		for _, t := range []string{v1alpha2.TypeUnpacked, v1alpha2.TypeInstalled} {
			cond := meta.FindStatusCondition(bd.Status.Conditions, t)
			if cond == nil || cond.ObservedGeneration < gen {
				continue
			}
			if t == v1alpha2.TypeInstalled && cond.Status == metav1.ConditionTrue {
				return true, nil
			}
			if cond.Status == metav1.ConditionFalse && slices.Contains(terminal, cond.Reason) {
				failed = fmt.Errorf("BundleDeployment %s: %s (%s): %s", name, t, cond.Reason, cond.Message)
				return true, nil
			}
		}
		return false, nil
	})
	if failed != nil {
		return bd, failed
	}
	if err != nil {
		return bd, fmt.Errorf("BundleDeployment %s was not installed within %s: %w", name, timeout, errors.Join(err, lastErr))
	}
	return bd, nil
}

// printInstalled prints the Installed condition of bd.
func printInstalled(w io.Writer, bd *v1alpha2.BundleDeployment) {
	if bd == nil {
		return
	}
	cond := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	if cond == nil {
		fmt.Fprintf(w, "Installed: Unknown (no status yet for generation %d)\n", bd.Generation)
		return
	}
	fmt.Fprintf(w, "Installed: %s (%s, generation %d): %s\n", cond.Status, cond.Reason, cond.ObservedGeneration, cond.Message)
}

// size formats a byte count.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
