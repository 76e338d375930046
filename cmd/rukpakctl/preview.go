package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

func init() { register(newPreviewCmd) }

// previewOptions are the flags of `rukpakctl preview`.
type previewOptions struct {
	kubeconfig     string
	context        string
	cf             contentFlags
	content        string
	serviceAccount string
	output         string
	all            bool
}

func newPreviewCmd() *cobra.Command {
	o := &previewOptions{}
	cmd := &cobra.Command{
		Use:   "preview NAME|FILE",
		Short: "Show the permissions a BundleDeployment's install identity needs, and which it lacks",
		Long: `Render a BundleDeployment's content as rukpak would and list the RBAC rules
its install identity (spec.serviceAccount in spec.installNamespace) needs on
the objects: every verb the apply engine uses (create, delete, get, list,
patch, watch) per resource and namespace. With a cluster, each rule is
checked with SubjectAccessReviews and marked OK or MISSING, and a Role,
ClusterRole and bindings granting what is missing are printed, ready for
kubectl apply.

NAME is a BundleDeployment on the cluster: its newest Bundle's content is
downloaded from the content server (as rukpakctl content does) unless
--content is given. FILE is a YAML file holding a BundleDeployment: its
content is --content (a directory, .tar.gz or image, as for rukpakctl
render), or its only image source.

The exit status is 1 when a rule is missing (or on any error), 0 when
nothing is missing or nothing could be checked (no cluster, no
spec.serviceAccount, or no permission to create SubjectAccessReviews).`,
		Example: `  rukpakctl preview my-operator
  rukpakctl preview bd.yaml --content ./my-bundle
  rukpakctl preview bd.yaml --content ./my-bundle -o yaml | kubectl apply -f -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"", "yaml"}, o.output) {
				return fmt.Errorf("--output %q: want yaml (default a table)", o.output)
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context (default the current one)")
	f.StringVar(&o.content, "content", "", "the bundle: DIR, FILE.tgz or IMAGE (default: the newest Bundle of NAME, or FILE's only image source)")
	f.StringVar(&o.serviceAccount, "service-account", "", "check this ServiceAccount of installNamespace instead of spec.serviceAccount")
	f.StringVarP(&o.output, "output", "o", "", "yaml: print only the RBAC objects granting what is missing")
	f.BoolVar(&o.all, "all", false, "with -o yaml, grant every required rule, not only the missing ones")
	o.cf.add(f)
	return cmd
}

// missingError is returned when the install identity lacks rules, so that
// rukpakctl exits with status 1.
type missingError struct {
	subject permissions.Subject
	bd      string
	missing int
}

func (e *missingError) Error() string {
	return fmt.Sprintf("%s lacks %d rule(s) BundleDeployment %s needs", e.subject, e.missing, e.bd)
}

// cluster is the API server preview talks to.
type cluster struct {
	client    client.Client
	clientset kubernetes.Interface
	cfg       *rest.Config
}

// run previews BundleDeployment arg (a name or a file).
func (o *previewOptions) run(ctx context.Context, stdout, stderr io.Writer, arg string) error {
	fromFile := isFile(arg)
	cl, err := o.connect(stderr, !fromFile)
	if err != nil {
		return err
	}
	var bd *v1alpha2.BundleDeployment
	if fromFile {
		bd, err = readBundleDeployment(arg)
	} else {
		bd, err = getBundleDeployment(ctx, cl.client, arg)
	}
	if err != nil {
		return err
	}

	objs, err := o.render(ctx, cl, bd, !fromFile)
	if err != nil {
		return err
	}
	var mapper meta.RESTMapper
	if cl != nil {
		mapper = cl.client.RESTMapper()
	}
	targets, guessed, err := toTargets(objs, mapper, bd.Spec.InstallNamespace)
	if err != nil {
		return err
	}
	if len(guessed) > 0 {
		why := "no cluster to ask"
		if cl != nil {
			why = "the cluster does not serve them and no CustomResourceDefinition of the bundle defines them"
		}
		fmt.Fprintf(stderr, "note: guessed the resource of %s (%s): check the plurals\n", strings.Join(guessed, ", "), why)
	}
	r := &report{bd: bd, objects: len(objs), required: permissions.Required(targets)}

	sa := o.serviceAccount
	if sa == "" && bd.Spec.ServiceAccount != nil {
		sa = bd.Spec.ServiceAccount.Name
	}
	if sa != "" {
		r.saNamespace, r.saName = bd.Spec.InstallNamespace, sa
		subject := permissions.ServiceAccount(r.saNamespace, r.saName)
		r.subject = &subject
		if cl != nil {
			if err := r.check(ctx, cl, stderr, targets); err != nil {
				return err
			}
		}
	}

	if o.output == "yaml" {
		err = r.printRoles(stdout, o.all)
	} else {
		err = r.printTable(stdout)
	}
	if err != nil {
		return err
	}
	if r.checked && len(r.missing) > 0 {
		return &missingError{subject: *r.subject, bd: bd.Name, missing: len(r.missing)}
	}
	return nil
}

// isFile reports whether arg names a file (rather than a BundleDeployment).
func isFile(arg string) bool {
	info, err := os.Stat(arg)
	return err == nil && !info.IsDir()
}

// connect reaches the cluster of the kubeconfig. Without need, a cluster
// that cannot be reached is noted on stderr and nil is returned.
func (o *previewOptions) connect(stderr io.Writer, need bool) (*cluster, error) {
	cl, err := o.dial()
	if err == nil {
		return cl, nil
	}
	if need {
		return nil, err
	}
	fmt.Fprintf(stderr, "note: working without a cluster: %v\n", err)
	return nil, nil
}

// dial builds clients from the kubeconfig and checks that the API server
// answers.
func (o *previewOptions) dial() (*cluster, error) {
	cfg, err := loadConfig(o.kubeconfig, o.context)
	if err != nil {
		return nil, err
	}
	// One SubjectAccessReview per resource and verb: do not throttle them.
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating clientset for %s: %w", cfg.Host, err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("reaching %s: %w", cfg.Host, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating client for %s: %w", cfg.Host, err)
	}
	return &cluster{client: c, clientset: cs, cfg: cfg}, nil
}

// render renders bd's content with its class and spec.config; onCluster
// says bd was read from the cluster (and has Bundles there).
func (o *previewOptions) render(ctx context.Context, cl *cluster, bd *v1alpha2.BundleDeployment, onCluster bool) ([]*unstructured.Unstructured, error) {
	prov, err := provisionerFor(ctx, cl, bd.Spec.ProvisionerClassName)
	if err != nil {
		return nil, err
	}
	if err := prov.CheckConfig(bd.Spec.Config); err != nil {
		return nil, err
	}
	var reader client.Reader
	var info *clusterinfo.Reader
	if cl != nil {
		reader = cl.client
		info = clusterinfo.New(cl.clientset.Discovery(), 0)
	} else if bd.Spec.Config != nil && len(bd.Spec.Config.ValuesFrom) > 0 {
		return nil, errors.New("spec.config.valuesFrom is read from the cluster, which cannot be reached")
	}
	vals, err := values.Resolve(ctx, reader, v1alpha2.SystemNamespace, bd.Spec.Config)
	if err != nil {
		return nil, err
	}
	cfg, err := builtins.FormatConfig(prov, bd.Name, bd.Spec.InstallNamespace, bd.Spec.Config, vals, info)
	if err != nil {
		return nil, err
	}

	ref, cleanupRef, err := o.contentRef(ctx, cl, bd, onCluster)
	if err != nil {
		return nil, err
	}
	defer cleanupRef()
	dir, cleanup, err := fetch(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	objs, err := prov.Format.Objects(ctx, os.DirFS(dir), cfg)
	if err != nil {
		return nil, fmt.Errorf("rendering %s as %s: %w", ref, bd.Spec.ProvisionerClassName, err)
	}
	return objs, nil
}

// provisionerFor returns the built-in provisioner of class, looking the
// class up on the cluster when it is not one of the built-in names.
func provisionerFor(ctx context.Context, cl *cluster, class string) (provisioner.Provisioner, error) {
	prov, err := builtinForClass(class)
	if err == nil || cl == nil {
		return prov, err
	}
	prov, ok, lookupErr := builtins.Builtin().ForClass(ctx, cl.client, class)
	if lookupErr != nil {
		return prov, lookupErr
	}
	if !ok {
		return prov, fmt.Errorf("ProvisionerClass %q does not exist or is not served by a built-in provisioner", class)
	}
	return prov, nil
}
