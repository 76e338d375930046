package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha1"
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
)

// costClass is a ProvisionerClass name no controller serves: the manager
// sees the BundleDeployments and Bundles the cost mode writes (and converts
// them for the API server's v1alpha1 cache) but does not install them.
const costClass = "bench-costs-unserved"

// costStep is one kind of request the cost mode measures: do makes the
// i-th request.
type costStep struct {
	name string
	do   func(ctx context.Context, i int) error
}

// costsScenario measures what one request of each kind the install makes
// costs the cluster: n requests of a kind, on c.concurrency workers, and
// the CPU seconds the API server, etcd and the manager (which serves the
// v1alpha1 conversions and watches what it manages) used for them, per
// request and against a ConfigMap server-side apply measured in the same
// run (first and last, since this machine's speed drifts).
// The custom-resource writes and the inventory's create carry the bodies
// the manager sends (the request floor's), and each kind starts once the
// cluster is quiet. A Bundle create is measured twice: as the manager
// writes it (its own Bundles pass no admission policy) and, with the same
// body, by another admin (the policies run). Then the same for the custom resources once v1alpha1 is no longer
// served, which removes the API server's v1alpha1 watch cache.
func costsScenario(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cfg *rest.Config, cs kubernetes.Interface) error {
	n := c.costs
	// Bundles as the manager writes them: with its requester.
	var err error
	if c.requester, err = managerRequester(ctx, cfg); err != nil {
		return err
	}
	procs, err := cpuProcesses(cl)
	if err != nil {
		return err
	}
	adminCfg := rest.CopyConfig(cfg)
	adminCfg.Impersonate = rest.ImpersonationConfig{UserName: "bench-admin", Groups: []string{"system:masters"}}
	admin, err := client.New(adminCfg, client.Options{Scheme: k.Scheme()})
	if err != nil {
		return err
	}
	ns := "costs"
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("creating namespace: %w", err)
	}
	if err := k.Create(ctx, &v1alpha2.ProvisionerClass{ObjectMeta: metav1.ObjectMeta{Name: costClass},
		Spec: v1alpha2.ProvisionerClassSpec{ControllerName: "bench.rukpak.io/nobody"}}); err != nil {
		return fmt.Errorf("creating ProvisionerClass: %w", err)
	}
	cm := func(prefix string, i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: ns},
			Data:       map[string]string{"index": fmt.Sprint(i)},
		}
	}
	apply := func(prefix string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			return k.Patch(ctx, cm(prefix, i), client.Apply, client.FieldOwner("costs"), client.ForceOwnership)
		}
	}
	get := func(rv string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			return k.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("apply-a-%d", i)}, obj,
				&client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: rv}})
		}
	}
	// The custom-resource writes with the bodies the manager sends (the
	// request floor's): the BundleDeployments' UIDs, taken from their
	// creates, own the Bundles; the status is a first install's.
	crSteps := func(suffix, name string, bds []*v1alpha2.BundleDeployment) []costStep {
		bdName := func(i int) string { return fmt.Sprintf("%s-%d", name, i) }
		return []costStep{
			{"create BundleDeployment" + suffix, func(ctx context.Context, i int) error {
				bd := bundleDeployment(i, 1)
				bd.Name, bd.Spec.ProvisionerClassName, bd.Spec.InstallNamespace = bdName(i), costClass, ns
				bds[i] = bd
				return k.Create(ctx, bd)
			}},
			{"create Bundle" + suffix, func(ctx context.Context, i int) error {
				return k.Create(ctx, floorBundle(c, bds[i], bdName(i)+"-0123456789", floorPinned(bds[i].Spec.Sources)))
			}},
			{"BundleDeployment status patch" + suffix, func(ctx context.Context, i int) error {
				bd := bds[i].DeepCopy()
				base := bd.DeepCopy()
				floorStatus(bd, bdName(i)+"-0123456789", floorPinned(bd.Spec.Sources), c.objects)
				return k.Status().Patch(ctx, bd, client.MergeFrom(base))
			}},
			{"Bundle status patch" + suffix, func(ctx context.Context, i int) error {
				b := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: bdName(i) + "-0123456789"}}
				base := b.DeepCopy()
				b.Status.ObservedGeneration, b.Status.ObjectCount = 1, int32(c.objects)
				b.Status.ContentDigest = "sha256:" + floorHex
				meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionTrue,
					Reason: "Unpacked", Message: "content " + b.Status.ContentDigest + " is in the content store", ObservedGeneration: 1})
				return k.Status().Patch(ctx, b, client.MergeFrom(base))
			}},
		}
	}
	// The first run's BundleDeployments, which the admin's Bundles name too.
	firstBDs := make([]*v1alpha2.BundleDeployment, n)
	steps := []costStep{
		{"ConfigMap apply (create)", apply("apply-a")},
		{"ConfigMap apply (unchanged)", apply("apply-a")},
		{"ConfigMap read", get("")},
		{"ConfigMap read from the watch cache", get("0")},
		{"ConfigMap create", func(ctx context.Context, i int) error { return k.Create(ctx, cm("create", i)) }},
		{"Event create", func(ctx context.Context, i int) error {
			return k.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("costs-%d", i), Namespace: ns},
				InvolvedObject: corev1.ObjectReference{Kind: "BundleDeployment", Namespace: ns, Name: fmt.Sprintf("costs-%d", i)},
				Reason:         "Installed", Message: "revision installed: 10 objects", Type: corev1.EventTypeNormal,
				FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1, Source: corev1.EventSource{Component: "rukpak"}})
		}},
	}
	steps = append(steps, crSteps("", "costs", firstBDs)...)
	steps = append(steps,
		costStep{"create Bundle (by another admin)", func(ctx context.Context, i int) error {
			bd := firstBDs[i]
			return admin.Create(ctx, floorBundle(c, bd, bd.Name+"-admin", floorPinned(bd.Spec.Sources)))
		}},
		costStep{"inventory create", func(ctx context.Context, i int) error {
			objects := make([]client.Object, c.objects)
			for j := range objects {
				objects[j] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b%d-o%d", i, j),
					ResourceVersion: fmt.Sprint(1000 + j)}}
			}
			inv, err := floorInventory(fmt.Sprintf("costs-%d", i), types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)), objects)
			if err != nil {
				return err
			}
			return k.Create(ctx, inv)
		}})
	type result struct {
		name string
		cpu  cpuSample
		wall time.Duration
	}
	var results []result
	run := func(s costStep) error {
		if !quiet(ctx, procs) {
			fmt.Printf("%s: the cluster was still busy after %s; measuring anyway\n", s.name, quietTimeout)
		}
		cpu0 := procs.sample()
		start := time.Now()
		// With -pprof, profiles of the first 3 s of each step.
		profiled := profileInstall(ctx, c, cs, 3, "costs-"+strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(s.name))
		if err := parallel(n, c.concurrency, func(i int) error { return s.do(ctx, i) }); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		wall := time.Since(start)
		used := procs.used(cpu0)
		if err := <-profiled; err != nil {
			return err
		}
		results = append(results, result{s.name, used, wall})
		return nil
	}
	for _, s := range steps {
		if err := run(s); err != nil {
			return err
		}
	}
	for _, crd := range []string{"bundledeployments.core.rukpak.io", "bundles.core.rukpak.io"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		u.SetName(crd)
		patch := `[{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"},{"op":"replace","path":"/spec/versions/0/served","value":false}]`
		if err := k.Patch(ctx, u, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
			return fmt.Errorf("no longer serving v1alpha1 of %s: %w", crd, err)
		}
	}
	// The API server drops the v1alpha1 handlers (and their watch cache)
	// as it takes the CRDs' change in; discovery stops listing the
	// version then.
	changed := time.Now()
	if err := v1alpha1Gone(ctx, cs); err != nil {
		return err
	}
	// It keeps the CRDs' old storage (a watch cache per version, the
	// v1alpha1 one converting every write through the webhook) until the
	// requests holding it end (the manager's watches) or twice its
	// request timeout has passed: every write until then is decoded by
	// three caches, not one.
	fmt.Printf("waiting %s for the old v1alpha1 storage to be torn down\n", time.Until(changed.Add(oldStorageTeardown)).Round(time.Second))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(changed.Add(oldStorageTeardown))):
	}
	for _, s := range append(crSteps(" (v1alpha1 not served)", "costs-v1alpha2", make([]*v1alpha2.BundleDeployment, n)), costStep{"ConfigMap apply (create, last)", apply("apply-c")}) {
		if err := run(s); err != nil {
			return err
		}
	}

	// Each row against the mean of the first and the last ConfigMap
	// applies that create.
	var unit float64
	var units int
	for _, r := range results {
		if r.name == "ConfigMap apply (create)" || r.name == "ConfigMap apply (create, last)" {
			unit += r.cpu[0] + r.cpu[1] + r.cpu[2]
			units++
		}
	}
	unit /= float64(units)
	fmt.Printf("\n%d requests of each kind on %d workers; CPU ms per request of the manager, API server and etcd; against a ConfigMap apply that creates (%.2f ms)\n",
		n, c.concurrency, unit*1000/float64(n))
	fmt.Printf("%-48s %8s %8s %8s %8s %8s %8s\n", "request", "manager", "apiserv", "etcd", "total", "vs apply", "wall ms")
	for _, r := range results {
		total := r.cpu[0] + r.cpu[1] + r.cpu[2]
		per := func(s float64) float64 { return s * 1000 / float64(n) }
		fmt.Printf("%-48s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", r.name, per(r.cpu[0]), per(r.cpu[1]), per(r.cpu[2]), per(total), total/unit,
			float64(r.wall.Microseconds())/1000/float64(n)*float64(c.concurrency))
	}
	return nil
}

// v1alpha1Gone waits, for at most a minute, until discovery no longer
// lists core.rukpak.io/v1alpha1.
func v1alpha1Gone(ctx context.Context, cs kubernetes.Interface) error {
	gv := v1alpha1.GroupVersion.String()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		_, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("%s is still served a minute after the CRDs stopped serving it (last error: %w)", gv, err)
		}
	}
}

// oldStorageTeardown is how long the API server keeps a changed CRD's old
// storage at most: twice its request timeout (the local cluster's is the
// default minute), and the second it waits before it looks.
const oldStorageTeardown = 2*time.Minute + 5*time.Second

// quietTimeout bounds quiet's wait.
const quietTimeout = 30 * time.Second

// quiet waits until the cluster's processes (the manager, the API server
// and etcd) together use less than a tenth of a core over a second, so
// that what one step leaves behind (watch events, the manager's work, the
// caches a CRD change rebuilds) is not charged to the next; false if they
// were still busy after quietTimeout.
func quiet(ctx context.Context, procs *cpuSet) bool {
	for deadline := time.Now().Add(quietTimeout); time.Now().Before(deadline); {
		before := procs.sample()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
		if used := procs.used(before); used[0]+used[1]+used[2] < 0.1 {
			return true
		}
	}
	return false
}
