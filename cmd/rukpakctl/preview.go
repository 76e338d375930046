package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/pkg/format"
)

func init() { register(newPreviewCmd) }

// previewOptions are the flags of `rukpakctl preview`.
type previewOptions struct {
	inputFlags
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
	o.inputFlags.add(f)
	f.StringVar(&o.serviceAccount, "service-account", "", "check this ServiceAccount of installNamespace instead of spec.serviceAccount")
	f.StringVarP(&o.output, "output", "o", "", "yaml: print only the RBAC objects granting what is missing")
	f.BoolVar(&o.all, "all", false, "with -o yaml, grant every required rule, not only the missing ones")
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

// run previews BundleDeployment arg (a name or a file).
func (o *previewOptions) run(ctx context.Context, stdout, stderr io.Writer, arg string) error {
	cl, err := o.connect(stderr, !isFile(arg))
	if err != nil {
		return err
	}
	in, err := read(ctx, cl, arg)
	if err != nil {
		return err
	}
	bd := in.bd
	objs, err := o.render(ctx, stderr, cl, in, format.Release{})
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
