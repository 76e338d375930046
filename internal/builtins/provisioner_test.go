package builtins

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestCheckConfig(t *testing.T) {
	values := &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}
	set := Builtin()
	tests := []struct {
		name       string
		controller string
		cfg        *v1alpha2.BundleConfig
		wantErr    string
	}{
		{"no config", v1alpha2.ControllerPlain, nil, ""},
		{"empty config", v1alpha2.ControllerPlain, &v1alpha2.BundleConfig{}, ""},
		{"values for plain", v1alpha2.ControllerPlain, &v1alpha2.BundleConfig{Values: values}, "spec.config.values"},
		{"valuesFrom for registry", v1alpha2.ControllerRegistry,
			&v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: "Secret", Name: "s"}}}, "valuesFrom"},
		{"watchNamespaces for helm", v1alpha2.ControllerHelm, &v1alpha2.BundleConfig{WatchNamespaces: []string{"a"}}, "watchNamespaces"},
		{"watchNamespaces for registry", v1alpha2.ControllerRegistry, &v1alpha2.BundleConfig{WatchNamespaces: []string{"a"}}, ""},
		{"values for helm", v1alpha2.ControllerHelm, &v1alpha2.BundleConfig{Values: values}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := set[tt.controller].CheckConfig(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckConfig() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckConfig() = %v, want an error naming %q", err, tt.wantErr)
			}
			if failure.Reason(err, "") != v1alpha2.ReasonInvalidConfig {
				t.Fatalf("reason = %q, want InvalidConfig", failure.Reason(err, ""))
			}
		})
	}
}
