package health

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestRelevant(t *testing.T) {
	c, err := NewChecker([]v1alpha2.Probe{probe("", "ConfigMap", "has(self.data)")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		checker *Checker
		gk      schema.GroupKind
		want    bool
	}{
		{"Deployment", nil, schema.GroupKind{Group: "apps", Kind: "Deployment"}, true},
		{"Job", nil, schema.GroupKind{Group: "batch", Kind: "Job"}, true},
		{"CRD", nil, schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, true},
		{"PVC", nil, schema.GroupKind{Kind: "PersistentVolumeClaim"}, true},
		{"Pod", nil, schema.GroupKind{Kind: "Pod"}, true},
		{"unknown custom resource", nil, schema.GroupKind{Group: "example.com", Kind: "Widget"}, true},
		{"ConfigMap", nil, schema.GroupKind{Kind: "ConfigMap"}, false},
		{"Secret", nil, schema.GroupKind{Kind: "Secret"}, false},
		{"ServiceAccount", nil, schema.GroupKind{Kind: "ServiceAccount"}, false},
		{"Service", nil, schema.GroupKind{Kind: "Service"}, false},
		{"Namespace", nil, schema.GroupKind{Kind: "Namespace"}, false},
		{"ClusterRoleBinding", nil, schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, false},
		{"NetworkPolicy", nil, schema.GroupKind{Group: "networking.k8s.io", Kind: "NetworkPolicy"}, false},
		{"Role in another group is unknown", nil, schema.GroupKind{Group: "example.com", Kind: "Role"}, true},
		{"ConfigMap selected by a probe", c, schema.GroupKind{Kind: "ConfigMap"}, true},
		{"Secret not selected by the probe", c, schema.GroupKind{Kind: "Secret"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.checker.Relevant(tt.gk); got != tt.want {
				t.Fatalf("Relevant(%v) = %v, want %v", tt.gk, got, tt.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	web := Unhealthy{Object: "Deployment ns/web", Reason: "1/3 replicas available"}
	job := Unhealthy{Object: "Job ns/migrate", Reason: "job running: 1 active, 0 succeeded"}
	many := make([]Unhealthy, 7)
	for i := range many {
		many[i] = Unhealthy{Object: fmt.Sprintf("Pod ns/p%d", i), Reason: "condition Ready not reported"}
	}
	tests := []struct {
		name      string
		unhealthy []Unhealthy
		total     int
		want      string
	}{
		{"all healthy", nil, 4, "all 4 objects healthy"},
		{"single healthy object", nil, 1, "the object is healthy"},
		{"no objects", nil, 0, "no objects"},
		{"one of one", []Unhealthy{web}, 1, "1 of 1 object unhealthy: Deployment ns/web: 1/3 replicas available"},
		{"two", []Unhealthy{web, job}, 10,
			"2 of 10 objects unhealthy: Deployment ns/web: 1/3 replicas available; Job ns/migrate: job running: 1 active, 0 succeeded"},
		{"no reason", []Unhealthy{{Object: "Widget ns/w"}}, 2, "1 of 2 objects unhealthy: Widget ns/w"},
		{"total below count", []Unhealthy{web, job}, 0,
			"2 of 2 objects unhealthy: Deployment ns/web: 1/3 replicas available; Job ns/migrate: job running: 1 active, 0 succeeded"},
		{"more than five", many, 9,
			"7 of 9 objects unhealthy: Pod ns/p0: condition Ready not reported; Pod ns/p1: condition Ready not reported; " +
				"Pod ns/p2: condition Ready not reported; Pod ns/p3: condition Ready not reported; " +
				"Pod ns/p4: condition Ready not reported; and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.unhealthy, tt.total); got != tt.want {
				t.Fatalf("Summary() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummaryShortensLongReasons(t *testing.T) {
	got := Summary([]Unhealthy{{Object: "Widget ns/w", Reason: strings.Repeat("x", 5000)}}, 1)
	if n := len([]rune(got)); n > 300 {
		t.Fatalf("Summary() is %d runes, want a shortened reason", n)
	}
	if !strings.HasSuffix(got, "…") {
		t.Fatalf("Summary() = %q, want it to mark the cut", got)
	}
}
