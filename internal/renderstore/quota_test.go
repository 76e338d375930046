//go:build integration

package renderstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/tenant"
)

// TestTenantBounds checks the bounds of one tenant's kept renders: at most
// TenantRenders renders, and its renders and content within TenantQuota;
// other tenants' renders are not counted, the manager's own installs are
// held to neither bound, a render saved again costs
// nothing more, and a deleted render frees its room.
func TestTenantBounds(t *testing.T) {
	ns := env.Namespace(t, "renderquota")
	var content int64 = 1000
	s := newStore(t, ns, nil, 0, Options{TenantRenders: 2, TenantQuota: 1 << 20,
		ContentUsage: func(string) (int64, error) { return content, nil }})
	team := tenant.WithContext(context.Background(), "team-a")
	other := tenant.WithContext(context.Background(), "team-b")
	render := sampleRender()

	b1, b2, b3 := newBundle(t, "bd"), newBundle(t, "bd"), newBundle(t, "bd")
	if err := s.Save(team, b1, render); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(team, b2, render); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(team, b2, render); err != nil {
		t.Fatalf("saving the same render again: %v", err)
	}
	err := s.Save(team, b3, render)
	if !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "tenant team-a keeps 2 renders") {
		t.Fatalf("a third render of team-a: %v, want ErrQuota naming the bound", err)
	}
	if err := s.Save(other, b3, render); err != nil {
		t.Fatalf("team-b's first render: %v", err)
	}
	if got := s.TenantBytes("team-a"); got <= 0 {
		t.Errorf("TenantBytes(team-a) = %d, want what its two renders hold", got)
	}
	if err := s.Delete(context.Background(), b1.Name); err != nil {
		t.Fatal(err)
	}
	b4 := newBundle(t, "bd")
	if err := s.Save(team, b4, render); err != nil {
		t.Fatalf("a render after one was deleted: %v", err)
	}

	// The manager's own installs (an admin's) are not held to the count,
	// nor (below) to the quota.
	manager := tenant.WithContext(context.Background(), tenant.Manager)
	for i := range 3 {
		if err := s.Save(manager, newBundle(t, "bd"), render); err != nil {
			t.Fatalf("render %d of the manager's own installs: %v", i+1, err)
		}
	}

	// The quota counts the tenant's content too.
	content = 1<<20 - 100
	b5 := newBundle(t, "bd")
	err = s.Save(other, b5, render)
	if !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "tenant team-b's quota of 1Mi in the content store (--tenant-store-quota) is full") {
		t.Fatalf("a render over the quota: %v, want ErrQuota naming the quota", err)
	}
	if n := len(chunkSecrets(t, ns, b5)); n != 0 {
		t.Errorf("%d chunks of a refused render written", n)
	}
	if err := s.Save(manager, b5, render); err != nil {
		t.Errorf("a render of the manager's own installs with its content over the quota: %v", err)
	}
}

// TestEtcdBytesPerRevision measures what a kept render costs etcd: the
// chunk Secrets as the API server stores them (protobuf, managedFields
// included), for a small chart (the webapp golden render) and a typical
// one (twenty objects and a generated TLS key pair, which does not
// compress).
func TestEtcdBytesPerRevision(t *testing.T) {
	ns := env.Namespace(t, "renderbytes")
	s := newStore(t, ns, nil, 0, Options{})
	ctx := tenant.WithContext(context.Background(), "team-a")
	webapp := readGolden(t, "../format/helm/testdata/golden/webapp-defaults")
	typical := append(readGolden(t, "../format/helm/testdata/golden/webapp-defaults"), typicalObjects(t)...)
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
	}{{"webapp (3 objects)", webapp}, {fmt.Sprintf("typical (%d objects, a TLS pair)", len(typical)), typical}} {
		b := newBundle(t, "bd")
		r := sampleRender()
		r.Objects, r.Answers = tc.objs, nil
		if err := s.Save(ctx, b, r); err != nil {
			t.Fatal(err)
		}
		var yamlBytes, stored int
		for _, o := range tc.objs {
			y, _ := yaml.Marshal(o.Object)
			yamlBytes += len(y)
		}
		for name := range chunkSecrets(t, ns, b) {
			sec := &corev1.Secret{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: chunkName(b.Name, name)}, sec); err != nil {
				t.Fatal(err)
			}
			pb, err := sec.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			stored += len(pb) + len("/registry/secrets/"+ns+"/"+sec.Name)
		}
		t.Logf("%s: %d bytes of YAML kept as %d bytes in etcd (protobuf value and key)", tc.name, yamlBytes, stored)
		if stored > yamlBytes+4096 {
			t.Errorf("%s: %d bytes in etcd for %d bytes of YAML", tc.name, stored, yamlBytes)
		}
	}
}

// readGolden decodes the objects of a directory of golden YAML files.
func readGolden(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// typicalObjects are seventeen more objects a chart renders (ConfigMaps of
// settings, Services, Deployments, a TLS Secret whose certificate and key
// are random, as genCA makes them).
func typicalObjects(t *testing.T) []*unstructured.Unstructured {
	random := func(n int) string {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	out := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": "rel-tls", "labels": map[string]any{"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": "rel"}},
		"data":     map[string]any{"tls.crt": random(1100), "tls.key": random(1700), "ca.crt": random(1100)},
	}}}
	for i := range 8 {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("rel-settings-%d", i), "labels": map[string]any{"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": "rel"}},
			"data":     map[string]any{"app.properties": strings.Repeat(fmt.Sprintf("feature.%d.enabled=true\nfeature.%d.limit=100\n", i, i), 20)},
		}})
	}
	for i := range 4 {
		name := fmt.Sprintf("rel-worker-%d", i)
		labels := map[string]any{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "rel"}
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec":     map[string]any{"selector": labels, "ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http"}}},
		}}, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": labels}, "template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "worker", "image": "registry.example.com/webapp/worker@sha256:" + strings.Repeat("ab", 32),
					"args":           []any{"--queue=jobs", fmt.Sprintf("--shard=%d", i)},
					"ports":          []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
					"resources":      map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "256Mi"}, "requests": map[string]any{"cpu": "100m", "memory": "128Mi"}},
					"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}},
				}}},
			}},
		}})
	}
	return out
}
