//go:build integration

package main

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/permissions"
)

// objects parses YAML documents into objects.
func objects(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func TestToTargets(t *testing.T) {
	objs := objects(t,
		`{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: gadgetz.example.com},
		  spec: {group: example.com, scope: Cluster, names: {kind: Gadget, plural: gadgetz}}}`,
		`{apiVersion: example.com/v1, kind: Gadget, metadata: {name: g}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`,
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: elsewhere}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r, namespace: ignored}}`,
		`{apiVersion: example.org/v1, kind: Policy, metadata: {name: p}}`,
	)
	gvr := func(group, version, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}
	want := []permissions.Target{
		{Resource: gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"), Name: "gadgetz.example.com"},
		{Resource: gvr("example.com", "v1", "gadgetz"), Name: "g"},
		{Resource: gvr("", "v1", "configmaps"), Namespace: "install", Name: "c"},
		{Resource: gvr("apps", "v1", "deployments"), Namespace: "elsewhere", Name: "d"},
		{Resource: gvr("rbac.authorization.k8s.io", "v1", "clusterroles"), Name: "r"},
		{Resource: gvr("example.org", "v1", "policies"), Namespace: "install", Name: "p"},
	}
	tests := []struct {
		name        string
		mapper      meta.RESTMapper
		wantGuessed []string
	}{
		{name: "without a cluster: guessed but for the bundle's CRD", mapper: nil, wantGuessed: []string{
			"CustomResourceDefinition.apiextensions.k8s.io → customresourcedefinitions",
			"ConfigMap → configmaps",
			"Deployment.apps → deployments",
			"ClusterRole.rbac.authorization.k8s.io → clusterroles",
			"Policy.example.org → policies",
		}},
		{name: "with the cluster's mapper", mapper: testEnv.Client.RESTMapper(), wantGuessed: []string{
			"Policy.example.org → policies",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, guessed, err := toTargets(objs, tt.mapper, "install")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("targets =\n%+v\nwant\n%+v", got, want)
			}
			if !reflect.DeepEqual(guessed, tt.wantGuessed) {
				t.Errorf("guessed = %q, want %q", guessed, tt.wantGuessed)
			}
		})
	}
}
