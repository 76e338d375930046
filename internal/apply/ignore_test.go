//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
)

const scaledDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "registry.example/web:%s"}
`

const autoscaler = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`

// TestFieldsOtherControllersOwn: a scaler writes replicas through the
// scale subresource under its own field manager; re-applying the bundle
// (drift correction, an upgrade) changes the image but leaves the scaler's
// replicas, whether the rule comes from the bundle's autoscaler or is
// written out. Without a rule, the apply reverts them (the fight the rule
// prevents).
func TestFieldsOtherControllersOwn(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	tests := []struct {
		name         string
		docs         func(image string) []string
		rules        []apply.IgnoreRule
		wantReplicas int32
	}{
		{name: "an autoscaler in the bundle", docs: func(img string) []string { return []string{fmt.Sprintf(scaledDeployment, img), autoscaler} }, wantReplicas: 5},
		{name: "a rule", docs: func(img string) []string { return []string{fmt.Sprintf(scaledDeployment, img)} },
			rules: []apply.IgnoreRule{{Group: "apps", Kind: "Deployment", Paths: []apply.FieldPath{{"spec", "replicas"}}}}, wantReplicas: 5},
		{name: "no rule: reverted", docs: func(img string) []string { return []string{fmt.Sprintf(scaledDeployment, img)} }, wantReplicas: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "scaled")
			apply1 := func(image string) {
				t.Helper()
				p, err := e.Prepare(objs(t, tt.docs(image)...), ns, apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Apply(ctx, p.WithIgnored(append(tt.rules, p.AutoscalerRules()...)), apply.ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			apply1("1")
			d := &appsv1.Deployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != 2 {
				t.Fatalf("created with %d replicas, want the bundle's 2", *d.Spec.Replicas)
			}
			scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
			if err := env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("test-scaler")); err != nil {
				t.Fatal(err)
			}
			apply1("2")
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != tt.wantReplicas || d.Spec.Template.Spec.Containers[0].Image != "registry.example/web:2" {
				t.Fatalf("after re-applying: %d replicas, image %s; want %d and the new image", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, tt.wantReplicas)
			}
		})
	}
}
