package registryv1

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// FuzzObjects feeds arbitrary bytes as the CSV manifest and as
// metadata/annotations.yaml: the result must be objects with an apiVersion,
// a kind and a name, or a failure with one of the format's reasons, never a
// panic.
func FuzzObjects(f *testing.F) {
	csvs, _ := filepath.Glob(filepath.Join("testdata", "bundles", "*", "manifests", "*.clusterserviceversion.yaml"))
	for _, p := range csvs {
		csv, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		ann, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(p)), "metadata", "annotations.yaml"))
		f.Add(csv, ann)
	}
	for _, s := range []string{"", "null", "{}", "kind: ClusterServiceVersion", "spec: {install: {spec: {deployments: [{spec: {template: 1}}]}}}"} {
		f.Add([]byte(testCSV{}.yaml()), []byte(s))
		f.Add([]byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: x}\n"+s), []byte(""))
	}
	f.Add([]byte(testCSV{deployments: "[{name: op, spec: {template: {metadata: []}}}]"}.yaml()), []byte("annotations: {a: 1}"))
	allowed := map[string]bool{
		v1alpha2.ReasonInvalidContent:         true,
		v1alpha2.ReasonUnsupportedFeature:     true,
		v1alpha2.ReasonUnsupportedInstallMode: true,
	}
	f.Fuzz(func(t *testing.T, csv, annotations []byte) {
		fsys := fstest.MapFS{
			"manifests/csv.yaml":        &fstest.MapFile{Data: csv},
			"metadata/annotations.yaml": &fstest.MapFile{Data: annotations},
		}
		objs, err := New().Objects(context.Background(), fsys, format.Config{InstallNamespace: "ns"})
		if err != nil {
			if r := failure.Reason(err, ""); !allowed[r] {
				t.Fatalf("error %v has reason %q", err, r)
			}
			return
		}
		for _, o := range objs {
			if o.GetKind() == "" || o.GetName() == "" || o.GetAPIVersion() == "" {
				t.Fatalf("object without apiVersion, kind or name: %v", o.Object)
			}
		}
	})
}
