package apply

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// TestClassifyKindNotServed: the answers of the API server to a write, a
// dry-run or a list that say it does not serve the kind are UnknownKind
// (retried), never a refusal of the content (held); an answer about the
// namespace stays NamespaceNotFound, and the others keep their code.
func TestClassifyKindNotServed(t *testing.T) {
	monitors := schema.GroupResource{Group: "monitoring.coreos.com", Resource: "servicemonitors"}
	// What client-go makes of the API server's bare 404 ("404 page not
	// found", not a Status): a resource it does not serve, such as one
	// whose CRD was deleted or whose APIService is gone.
	bare := apierrors.NewGenericServerResponse(http.StatusNotFound, http.MethodPatch, monitors, "web", "404 page not found", 0, true)
	terminating := apierrors.NewMethodNotSupported(monitors, "create")
	terminating.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"bare 404 of a write", bare, CodeUnknownKind},
		{"bare 404, wrapped", fmt.Errorf("applying: %w", bare), CodeUnknownKind},
		{"bare 404 of a create, no name", apierrors.NewGenericServerResponse(http.StatusNotFound, http.MethodPost, monitors, "", "404 page not found", 0, true), CodeUnknownKind},
		{"a NotFound Status not about the namespace", apierrors.NewNotFound(monitors, "web"), CodeUnknownKind},
		{"the RESTMapper knows no such kind", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}}, CodeUnknownKind},
		{"its CRD is being deleted", terminating, CodeUnknownKind},
		{"the namespace is missing", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a"), CodeNamespaceNotFound},
		{"another method not supported", apierrors.NewMethodNotSupported(monitors, "patch"), CodeRefused},
		{"invalid content", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "a", nil), CodeRefused},
		{"forbidden", apierrors.NewForbidden(monitors, "web", errors.New("no")), CodeRefused},
		{"a conflict is transient", apierrors.NewConflict(monitors, "web", errors.New("changed")), 0},
		{"an unavailable server is transient", apierrors.NewServiceUnavailable("later"), 0},
		{"not an API error", errors.New("connection reset"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := classify(tt.err, CodeRefused)
			var got Code
			if f != nil {
				got = f.Code
			}
			if got != tt.want {
				t.Fatalf("classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if got == CodeUnknownKind && !meta.IsNoMatchError(tt.err) && f.Message != notServed+": "+tt.err.Error() {
				t.Fatalf("message %q does not say the kind is not served", f.Message)
			}
		})
	}
}

// TestClassifyAnswerTellsKindNotServed: an answer of the API server that
// a mapped kind is not served is told to Options.KindNotServed (the
// RESTMapper is out of date); a kind the RESTMapper does not know, and
// every other answer, is not.
func TestClassifyAnswerTellsKindNotServed(t *testing.T) {
	told := 0
	e := New(nil, nil, nil, nil, Options{KindNotServed: func() { told++ }})
	monitors := schema.GroupResource{Group: "monitoring.coreos.com", Resource: "servicemonitors"}
	for _, tt := range []struct {
		err  error
		told int
	}{
		{apierrors.NewGenericServerResponse(http.StatusNotFound, http.MethodPatch, monitors, "web", "404 page not found", 0, true), 1},
		{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}}, 1},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a"), 1},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "a", nil), 1},
		{newError(CodeUnknownKind, "kind not served, found by Prepare"), 1},
		{apierrors.NewNotFound(monitors, "web"), 2},
	} {
		if f := e.classifyAnswer(tt.err, CodeRefused); f == nil {
			t.Fatalf("%v: not classified", tt.err)
		}
		if told != tt.told {
			t.Fatalf("after %v: told %d times, want %d", tt.err, told, tt.told)
		}
	}
}

// TestUnavailableGroupIsUnknownKind: a kind whose group's discovery failed
// (its APIService not available) is UnknownKind when a plan is prepared;
// a kind the RESTMapper finds in no group stays UnknownKind, or is the
// bundle's own CRD's; a RESTMapper that could not ask at all is transient.
func TestUnavailableGroupIsUnknownKind(t *testing.T) {
	metrics := schema.GroupVersion{Group: "metrics.example.com", Version: "v1beta1"}
	gvk := metrics.WithKind("PodMetrics")
	for _, tt := range []struct {
		name string
		err  error
		want Code
	}{
		{"discovery of its group failed", fmt.Errorf("failed to get API group resources: %w", &apiutil.ErrResourceDiscoveryFailed{metrics: apierrors.NewServiceUnavailable("the backend is down")}), CodeUnknownKind},
		{"its group is not served", &apiutil.ErrResourceDiscoveryFailed{metrics: apierrors.NewNotFound(schema.GroupResource{}, "")}, CodeUnknownKind},
		{"no such kind", &meta.NoKindMatchError{GroupKind: gvk.GroupKind()}, CodeUnknownKind},
		{"discovery could not be asked", errors.New("failed to get server groups: connection refused"), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := New(nil, nil, nil, failingMapper{err: tt.err}, Options{})
			_, _, _, err := e.scope(gvk, nil)
			if err == nil || CodeOf(err) != tt.want {
				t.Fatalf("scope: %v (code %v), want code %v", err, CodeOf(err), tt.want)
			}
		})
	}
}

// failingMapper is a RESTMapper whose every RESTMapping fails with err.
type failingMapper struct {
	meta.RESTMapper
	err error
}

func (m failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, m.err
}
