package servingcert

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// objects decodes YAML documents.
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

const (
	secretDoc = `{apiVersion: v1, kind: Secret, metadata: {name: op-service-cert, annotations: {"cert.rukpak.io/serving-for": op-service}}}`
	vwcDoc    = `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingWebhookConfiguration, metadata: {name: v, annotations: {"cert.rukpak.io/inject-ca-from": op-service-cert}},
  webhooks: [{name: a.example.com, clientConfig: {service: {name: op-service, namespace: ns}}}, {name: b.example.com, clientConfig: {url: "https://x"}}]}`
	crdDoc = `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: c, annotations: {"cert.rukpak.io/inject-ca-from": op-service-cert}},
  spec: {conversion: {strategy: Webhook, webhook: {clientConfig: {service: {name: op-service, namespace: ns}}}}}}`
	apiDoc = `{apiVersion: apiregistration.k8s.io/v1, kind: APIService, metadata: {name: v1.x, annotations: {"cert.rukpak.io/inject-ca-from": op-service-cert}}, spec: {service: {name: op-service, namespace: ns}}}`
)

func TestFill(t *testing.T) {
	now := time.Now()
	objs := objects(t, secretDoc, vwcDoc, crdDoc, apiDoc)
	res, err := Fill(objs, "ns", nil, now, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Renewed) != 1 || !res.Next.After(now) {
		t.Fatalf("Result = %+v", res)
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	ca := data[KeyCA]
	if ca == "" || objs[0].Object["type"] != "kubernetes.io/tls" {
		t.Fatalf("Secret not filled: %v", objs[0].Object)
	}
	hooks, _, _ := unstructured.NestedSlice(objs[1].Object, "webhooks")
	for i, want := range []string{ca, ""} {
		got, _, _ := unstructured.NestedString(hooks[i].(map[string]any), "clientConfig", "caBundle")
		if got != want {
			t.Errorf("webhooks[%d] caBundle = %q, want %q", i, got, want)
		}
	}
	if got, _, _ := unstructured.NestedString(objs[2].Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); got != ca {
		t.Errorf("CRD caBundle = %q", got)
	}
	if got, _, _ := unstructured.NestedString(objs[3].Object, "spec", "caBundle"); got != ca {
		t.Errorf("APIService caBundle = %q", got)
	}

	// Filling again from what was written keeps it.
	live := Live{"op-service-cert": map[string][]byte{}}
	for k, v := range data {
		b, _ := base64.StdEncoding.DecodeString(v)
		live["op-service-cert"][k] = b
	}
	again := objects(t, secretDoc, vwcDoc)
	res, err = Fill(again, "ns", live, now.Add(time.Minute), opts)
	if err != nil || len(res.Renewed) != 0 {
		t.Fatalf("Fill again = %+v, %v", res, err)
	}
	if got, _, _ := unstructured.NestedString(again[0].Object, "data", KeyCert); got != data[KeyCert] {
		t.Error("serving certificate changed")
	}
}

func TestFillRefuses(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		want string
	}{
		{"CA of a Secret not requested", []string{vwcDoc}, `names Secret "op-service-cert", which is not a certificate Secret`},
		{"mark on another kind", []string{secretDoc, `{apiVersion: v1, kind: ConfigMap, metadata: {name: m, annotations: {"cert.rukpak.io/inject-ca-from": op-service-cert}}}`}, "only for webhook configurations, CustomResourceDefinitions, APIServices and Deployments"},
		{"CRD without conversion webhook", []string{secretDoc, `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: c, annotations: {"cert.rukpak.io/inject-ca-from": op-service-cert}}, spec: {}}`}, "no conversion webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fill(objects(t, tt.docs...), "ns", nil, time.Now(), opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Fill error = %v, want %q", err, tt.want)
			}
		})
	}
}

// More certificate Secrets than MaxPerRevision are refused before any is
// read: the request is bundle content.
func TestLoadIsBounded(t *testing.T) {
	names := make([]string, MaxPerRevision+1)
	for i := range names {
		names[i] = fmt.Sprintf("svc-%d-cert", i)
	}
	_, err := Load(context.Background(), nil, "ns", names)
	if failure.Reason(err, "") != v1alpha2.ReasonInvalidContent || !strings.Contains(err.Error(), "more than the limit of 64") {
		t.Fatalf("err = %v, want InvalidContent naming the limit", err)
	}
}
