package registryv1

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/plain"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// Format reads registry+v1 bundles. It holds no state between calls and is
// safe for concurrent use as long as Limits is not changed meanwhile.
type Format struct {
	// Limits bound the manifests read, as for plain+v0; New sets
	// plain.DefaultLimits.
	Limits plain.Limits
}

var _ format.Format = (*Format)(nil)

// New returns a registry+v1 Format with the default limits.
func New() *Format {
	return &Format{Limits: plain.DefaultLimits()}
}

// Objects returns the objects that install the bundle of fsys: the
// manifests other than the ClusterServiceVersion, and the ServiceAccounts,
// RBAC and Deployments its install strategy describes, in apply order. See
// the package documentation for the rules.
func (f *Format) Objects(ctx context.Context, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading registry+v1 bundle: %w", err)
	}
	if errs := validation.IsDNS1123Label(cfg.InstallNamespace); len(errs) > 0 {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig,
			"install namespace %q is not a valid namespace name: %s", cfg.InstallNamespace, strings.Join(errs, "; "))
	}
	var watch []string
	if cfg.Bundle != nil {
		watch = cfg.Bundle.WatchNamespaces
	}
	mode, targets, err := SelectInstallMode(cfg.InstallNamespace, watch)
	if err != nil {
		return nil, err
	}
	meta, err := readMetadata(fsys)
	if err != nil {
		return nil, err
	}
	objs, err := f.readManifests(ctx, fsys, meta.manifestsDir, cfg)
	if err != nil {
		return nil, err
	}
	csvObj, rest, err := splitCSV(objs, meta.manifestsDir)
	if err != nil {
		return nil, err
	}
	csv, err := decodeCSV(csvObj)
	if err != nil {
		return nil, err
	}
	if err := checkSupported(csv, meta); err != nil {
		return nil, err
	}
	if err := csv.checkInstallMode(mode, cfg.InstallNamespace); err != nil {
		return nil, err
	}
	if err := checkWebhooks(csv, mode, bundleCRDs(rest), cfg.InstallNamespace); err != nil {
		return nil, err
	}
	if err := checkAPIServices(csv); err != nil {
		return nil, err
	}
	gen, err := generate(csv, cfg.InstallNamespace, targets, rest)
	if err != nil {
		return nil, err
	}
	return order(rest, gen, meta.manifestsDir, csv.Metadata.Name, cfg.InstallNamespace)
}

// readManifests reads the manifests directory dir with plain+v0, shown
// to it as manifests/ and alone, so that plain+v0 reads neither the rest of
// the bundle nor a kustomization at its root.
func (f *Format) readManifests(ctx context.Context, fsys fs.FS, dir string, cfg format.Config) ([]*unstructured.Unstructured, error) {
	reader := &plain.Format{Limits: f.Limits}
	objs, err := reader.Objects(ctx, manifestsView{fsys: fsys, dir: dir}, cfg)
	if fail := failure.As(err); fail != nil && dir != defaultManifestsDir {
		// Name the files as they are in the bundle.
		msg := strings.ReplaceAll(fail.Message, defaultManifestsDir+"/", dir+"/")
		return nil, failure.New(fail.Reason, "%s", msg)
	}
	return objs, err
}

// generate returns the objects made from the CSV: ServiceAccounts (except
// those rest defines), RBAC, Deployments, and for webhooks and owned APIs
// their Services, certificate Secrets, webhook configurations and
// APIServices. The CRDs of rest that a conversion webhook converts get
// their spec.conversion.
func generate(csv *clusterServiceVersion, installNamespace string, targets []string, rest []*unstructured.Unstructured) (*generated, error) {
	existing := map[string]bool{}
	for _, o := range rest {
		if o.GetAPIVersion() == "v1" && o.GetKind() == "ServiceAccount" &&
			(o.GetNamespace() == "" || o.GetNamespace() == installNamespace) {
			existing[o.GetName()] = true
		}
	}
	gen := &generated{serviceAccounts: serviceAccounts(csv, installNamespace, existing)}
	b := &rbacBuilder{csvName: csv.Metadata.Name, installNamespace: installNamespace, out: gen, seen: map[string]bool{}}
	spec := csv.Spec.Install.Spec
	if err := b.addPermissions(spec.ClusterPermissions, true, targets); err != nil {
		return nil, err
	}
	if err := b.addPermissions(spec.Permissions, false, targets); err != nil {
		return nil, err
	}
	services, err := certServices(csv)
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, s := range services {
		served[s.deployment] = true
		objs, err := s.objects(csv, installNamespace)
		if err != nil {
			return nil, err
		}
		gen.services = append(gen.services, objs...)
	}
	for _, d := range spec.Deployments {
		obj, err := deployment(csv, d, installNamespace, targets)
		if err != nil {
			return nil, err
		}
		if served[d.Name] {
			mountCertificate(obj)
		}
		gen.deployments = append(gen.deployments, obj)
	}
	if err := addConversions(csv, installNamespace, bundleCRDs(rest)); err != nil {
		return nil, err
	}
	hooks, err := webhookConfigurations(csv, installNamespace, targets)
	if err != nil {
		return nil, err
	}
	apis, bindings, err := apiServices(csv, installNamespace)
	if err != nil {
		return nil, err
	}
	for _, b := range bindings {
		if b.GetKind() == "ClusterRoleBinding" {
			gen.clusterRoleBindings = append(gen.clusterRoleBindings, b)
		} else {
			gen.roleBindings = append(gen.roleBindings, b)
		}
	}
	gen.callers = append(hooks, apis...)
	return gen, nil
}
