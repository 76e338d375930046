// Package appspec is a bundle format for small applications: a bundle
// holds one file, app.yaml, describing an application — its image,
// replicas, port and environment — and the format turns it into a
// Deployment and, when a port is given, a Service. It is built only on
// rukpak's public packages (pkg/format, pkg/failure, pkg/provisioner), as
// a provisioner outside rukpak's repository would be.
//
// The ProvisionerClass's spec.parameters configure it for every bundle of
// the class: labels added to every object, and maxReplicas, the most
// replicas an app may ask for.
package appspec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// ControllerName is the ProvisionerClass controllerName this provisioner
// serves.
const ControllerName = "appspec.example.com/app"

// ClassName is the ProvisionerClass the provisioner creates at start.
const ClassName = "appspec"

// File is the bundle's one file.
const File = "app.yaml"

// maxFileSize bounds app.yaml: bundle content is untrusted.
const maxFileSize = 64 << 10

// App is the content of app.yaml.
type App struct {
	// Name names the Deployment and the Service (a DNS label).
	Name string `json:"name"`
	// Image is the container image.
	Image string `json:"image"`
	// Replicas is the number of pods; 1 when unset.
	Replicas *int32 `json:"replicas,omitempty"`
	// Port is the container port the Service forwards to; no Service when
	// unset.
	Port int32 `json:"port,omitempty"`
	// Env are the container's environment variables.
	Env map[string]string `json:"env,omitempty"`
	// NodeSelector constrains the nodes the pods run on.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// Parameters are the ProvisionerClass's spec.parameters.
type Parameters struct {
	// Labels are added to every object.
	Labels map[string]string `json:"labels,omitempty"`
	// MaxReplicas is the most replicas an app may ask for; 0 means 10.
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
}

// Format is the appspec format.
type Format struct{}

// Provisioner returns the provisioner of the appspec class: the format,
// which reads no spec.config field.
func Provisioner() provisioner.Provisioner {
	return provisioner.Provisioner{ControllerName: ControllerName, Format: Format{}}
}

// Class returns the ProvisionerClass the provisioner serves.
func Class() v1alpha2.ProvisionerClass {
	pc := v1alpha2.ProvisionerClass{Spec: v1alpha2.ProvisionerClassSpec{
		ControllerName: ControllerName,
		Description:    "Applications described by one app.yaml: a Deployment and a Service (example external provisioner).",
	}}
	pc.Name = ClassName
	return pc
}

// Objects reads app.yaml and returns the app's Deployment and Service.
// Problems with the content fail with reason InvalidContent naming
// app.yaml and the field; bad class parameters with InvalidConfig.
func (Format) Objects(_ context.Context, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	params, err := parameters(cfg.Parameters)
	if err != nil {
		return nil, err
	}
	app, err := read(fsys)
	if err != nil {
		return nil, err
	}
	if err := app.validate(params); err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": app.Name}
	objLabels := maps.Clone(params.Labels)
	if objLabels == nil {
		objLabels = map[string]string{}
	}
	maps.Copy(objLabels, labels)
	replicas := int32(1)
	if app.Replicas != nil {
		replicas = *app.Replicas
	}
	container := map[string]any{"name": "app", "image": app.Image}
	if app.Port != 0 {
		container["ports"] = []any{map[string]any{"name": "http", "containerPort": int64(app.Port)}}
	}
	if len(app.Env) > 0 {
		var env []any
		for _, k := range slices.Sorted(maps.Keys(app.Env)) {
			env = append(env, map[string]any{"name": k, "value": app.Env[k]})
		}
		container["env"] = env
	}
	podSpec := map[string]any{"containers": []any{container}}
	if len(app.NodeSelector) > 0 {
		podSpec["nodeSelector"] = toAny(app.NodeSelector)
	}
	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": app.Name, "labels": toAny(objLabels)},
		"spec": map[string]any{
			"replicas": int64(replicas),
			"selector": map[string]any{"matchLabels": toAny(labels)},
			"template": map[string]any{
				"metadata": map[string]any{"labels": toAny(objLabels)},
				"spec":     podSpec,
			},
		},
	}}
	objs := []*unstructured.Unstructured{deploy}
	if app.Port != 0 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "Service",
			"metadata":   map[string]any{"name": app.Name, "labels": toAny(objLabels)},
			"spec": map[string]any{
				"selector": toAny(labels),
				"ports":    []any{map[string]any{"name": "http", "port": int64(app.Port), "targetPort": "http"}},
			},
		}})
	}
	return objs, nil
}

// read parses app.yaml, refusing unknown fields.
func read(fsys fs.FS) (*App, error) {
	info, err := fs.Stat(fsys, File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "the bundle has no %s at its root", File)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", File, err)
	case !info.Mode().IsRegular():
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s is not a regular file", File)
	case info.Size() > maxFileSize:
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s is %d bytes, over the limit of %d", File, info.Size(), maxFileSize)
	}
	data, err := fs.ReadFile(fsys, File)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", File, err)
	}
	app := &App{}
	if err := yaml.UnmarshalStrict(data, app); err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s: %v", File, err)
	}
	return app, nil
}

// validate refuses an app the format cannot turn into valid objects.
func (a *App) validate(p Parameters) error {
	var problems []string
	if errs := validation.IsDNS1123Label(a.Name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("name %q: %s", a.Name, strings.Join(errs, "; ")))
	}
	if strings.TrimSpace(a.Image) == "" {
		problems = append(problems, "image is required")
	}
	if a.Replicas != nil && (*a.Replicas < 0 || *a.Replicas > p.MaxReplicas) {
		problems = append(problems, fmt.Sprintf("replicas %d: must be between 0 and %d (the class's maxReplicas)", *a.Replicas, p.MaxReplicas))
	}
	if a.Port != 0 {
		if errs := validation.IsValidPortNum(int(a.Port)); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("port %d: %s", a.Port, strings.Join(errs, "; ")))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("env %q: %s", k, strings.Join(errs, "; ")))
		}
	}
	if len(problems) > 0 {
		return failure.New(v1alpha2.ReasonInvalidContent, "%s: %s", File, strings.Join(problems, "; "))
	}
	return nil
}

// parameters reads the class's parameters.
func parameters(raw map[string]any) (Parameters, error) {
	p := Parameters{}
	if raw != nil {
		data, err := yaml.Marshal(raw)
		if err == nil {
			err = yaml.UnmarshalStrict(data, &p)
		}
		if err != nil {
			return p, failure.New(v1alpha2.ReasonInvalidConfig, "ProvisionerClass spec.parameters: %v", err)
		}
	}
	if p.MaxReplicas == 0 {
		p.MaxReplicas = 10
	}
	return p, nil
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
