package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
)

// bigObjects returns n objects of a mix of kinds, about 5 KB each: one CRD
// and a tenth custom resources of it, then ConfigMaps, Secrets, Services
// and Deployments in turn. version changes the data of every hundredth
// ConfigMap, so two versions differ in 1 % of the objects.
func bigObjects(n int, ns, version string) []*unstructured.Unstructured {
	// Padding that compresses about as well as real manifests do (an
	// archive that expands more than 200 times is refused as a bomb).
	seed := sha256.Sum256([]byte("bench"))
	var padBuf strings.Builder
	for padBuf.Len() < 4000 {
		seed = sha256.Sum256(seed[:])
		padBuf.WriteString(hex.EncodeToString(seed[:]))
	}
	pad := padBuf.String()
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.bench.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptrTrue()}}}}}},
		},
	}
	out := []*unstructured.Unstructured{toUnstructured(crd)}
	crs := n / 10
	for i := 0; i < crs; i++ {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "bench.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%d", i), "namespace": ns},
			"spec":     map[string]any{"pad": pad},
		}})
	}
	for i := 0; len(out) < n; i++ {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("o%d", i), Namespace: ns}
		var obj any
		switch i % 5 {
		case 0, 1:
			data := "v1"
			if i%100 == 0 {
				data = version
			}
			obj = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: map[string]string{"version": data, "pad": pad}}
		case 2:
			obj = &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, StringData: map[string]string{"pad": pad}}
		case 3:
			obj = &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: ns, Annotations: map[string]string{"pad": pad}},
				Spec: corev1.ServiceSpec{ClusterIP: "None", Selector: map[string]string{"app": meta.Name}, Ports: []corev1.ServicePort{{Port: 80}}}}
		default:
			obj = deploymentObject(meta, pad)
		}
		out = append(out, toUnstructured(obj))
	}
	return out
}

func ptrTrue() *bool { t := true; return &t }

func toUnstructured(obj any) *unstructured.Unstructured {
	data, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		panic(err)
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u
}

func deploymentObject(meta metav1.ObjectMeta, pad string) any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": meta.Name, "namespace": meta.Namespace, "annotations": map[string]any{"pad": pad}},
		"spec": map[string]any{
			"replicas": 0,
			"selector": map[string]any{"matchLabels": map[string]any{"app": meta.Name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": meta.Name}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.example/app:1"}}},
			},
		},
	}
}

// bundleImage pushes objs as a plain bundle (manifests/, a file per 500
// objects) to ref.
func bundleImage(ref string, objs []*unstructured.Unstructured) (int, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	size := 0
	for f := 0; f*500 < len(objs); f++ {
		var doc strings.Builder
		for _, o := range objs[f*500 : min((f+1)*500, len(objs))] {
			data, err := yaml.Marshal(o.Object)
			if err != nil {
				return 0, err
			}
			doc.WriteString("---\n")
			doc.Write(data)
		}
		size += doc.Len()
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("manifests/%03d.yaml", f), Mode: 0o644, Size: int64(doc.Len()), Typeflag: tar.TypeReg}); err != nil {
			return 0, err
		}
		if _, err := io.WriteString(tw, doc.String()); err != nil {
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return 0, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return 0, err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return 0, err
	}
	return size, remote.Write(r, img)
}

// bigScenario installs one bundle of c.big objects and measures it against
// the floor (the same objects server-side applied by a plain client, the
// CRD first), the manager's peak RSS, and an upgrade that changes 1 % of
// the objects: its time against the install's and its writes.
func bigScenario(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cs kubernetes.Interface) error {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	const ns = "big"
	for _, n := range []string{ns, "big-floor"} {
		if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			return err
		}
	}
	v1Objs := bigObjects(c.big, "", "v1")
	size, err := bundleImage(host+"/big:v1", v1Objs)
	if err != nil {
		return fmt.Errorf("pushing the bundle: %w", err)
	}
	fmt.Printf("big bundle: %d objects, %.1f MB of YAML\n", len(v1Objs), float64(size)/1e6)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns,
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: host + "/big:v1", InsecureSkipTLSVerify: true}}}},
	}
	start := time.Now()
	if err := k.Create(ctx, bd); err != nil {
		return err
	}
	// The install's first 10 seconds.
	installProfiled := profileInstall(ctx, c, cs, 10, "big-install")
	if err := waitGeneration(ctx, k, "big", 1, 30*time.Minute); err != nil {
		return err
	}
	install := time.Since(start)
	if err := <-installProfiled; err != nil {
		return err
	}
	pid, err := cl.PID("rukpak")
	if err != nil {
		return err
	}
	rss, err := peakRSS(pid)
	if err != nil {
		return err
	}

	// The floor: the CRD, then everything else, by a plain client.
	floorObjs := bigObjects(c.big, "big-floor", "v1")
	start = time.Now()
	crd := floorObjs[0]
	if err := k.Patch(ctx, crd, client.Apply, client.FieldOwner("floor"), client.ForceOwnership); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := k.Get(ctx, client.ObjectKey{Name: crd.GetName()}, got); err == nil {
			established := false
			for _, cond := range got.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			if established {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("floor: CRD not Established")
		}
	}
	rest := floorObjs[1:]
	if err := parallel(len(rest), c.concurrency, func(i int) error {
		return k.Patch(ctx, rest[i], client.Apply, client.FieldOwner("floor"), client.ForceOwnership)
	}); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	floor := time.Since(start)

	// The upgrade: 1 % of the objects change.
	if _, err := bundleImage(host+"/big:v2", bigObjects(c.big, "", "v2")); err != nil {
		return err
	}
	before, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	profiled := make(chan error, 1)
	if c.pprof != "" {
		// The manager's CPU profile of the upgrade's first 5 seconds.
		go func() { profiled <- cpuProfile(ctx, c.pprof, 5, filepath.Join(c.stateDir, "big-upgrade.pprof")) }()
	} else {
		profiled <- nil
	}
	start = time.Now()
	cur := &v1alpha2.BundleDeployment{}
	if err := k.Get(ctx, client.ObjectKey{Name: "big"}, cur); err != nil {
		return err
	}
	cur.Spec.Sources[0].Image.Ref = host + "/big:v2"
	if err := k.Update(ctx, cur); err != nil {
		return err
	}
	if err := waitGeneration(ctx, k, "big", cur.Generation, 30*time.Minute); err != nil {
		return err
	}
	upgrade := time.Since(start)
	if err := <-profiled; err != nil {
		return err
	}
	after, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	applies := 0.0
	for key, v := range after {
		if strings.HasPrefix(key, "APPLY ") && !strings.HasSuffix(key, "(dry-run)") {
			applies += v - before[key]
		}
	}
	// bigObjects changes the objects of every hundredth index after the
	// CRD and the custom resources (all ConfigMaps).
	changed := (c.big - c.big/10 - 1 + 99) / 100
	fmt.Printf("big: install %s, floor %s, upgrade %s; upgrade requests: %s\n", install.Round(time.Millisecond), floor.Round(time.Millisecond),
		upgrade.Round(time.Millisecond), after.top(before, 8))
	ratio := install.Seconds() / floor.Seconds()
	figure("big", "ratio", fmt.Sprintf("%.2f", ratio), "<=1.5", ratio <= 1.5)
	figure("big", "peak-rss-mib", fmt.Sprintf("%.0f", float64(rss)/1024), "<=512", float64(rss)/1024 <= 512)
	frac := upgrade.Seconds() / install.Seconds()
	figure("big", "upgrade-fraction", fmt.Sprintf("%.3f", frac), "<=0.10", frac <= 0.10)
	figure("big", "upgrade-applies", fmt.Sprintf("%.0f", applies), fmt.Sprintf("==%d(the-changed-objects)", changed), int(applies) <= changed)
	return nil
}

// waitGeneration waits until BundleDeployment name is Installed for
// generation gen, reading it every 50ms.
func waitGeneration(ctx context.Context, k client.Client, name string, gen int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		bd := &v1alpha2.BundleDeployment{}
		if err := k.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		for _, cond := range bd.Status.Conditions {
			if cond.Type == v1alpha2.TypeInstalled && cond.ObservedGeneration == gen {
				if cond.Status == metav1.ConditionTrue {
					return nil
				}
				if time.Since(last) > 10*time.Second {
					fmt.Printf("  %s: Installed %s %s: %.200s\n", name, cond.Status, cond.Reason, cond.Message)
					last = time.Now()
				}
			}
		}
	}
	return fmt.Errorf("bd/%s not Installed for generation %d within %s", name, gen, timeout)
}
