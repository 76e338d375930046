package crdsafety

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestVersionCheck judges single objects under an installed and a new
// schema of their version: only what the change breaks is a problem, at
// the schema path of the field.
func TestVersionCheck(t *testing.T) {
	spec := object(props{"color": str(), "size": integer(), "labels": mapOf(object(props{"v": str()}))})
	statusVersion := func(status apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
		return withStatus(version("v1", spec), status)
	}
	const healthy = `{"conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "fine", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}`
	tests := []struct {
		name     string
		old, new apiextensionsv1.CustomResourceDefinitionVersion
		spec     string
		status   string
		want     []problem
	}{
		{
			name: "status moves to metav1.Condition, the object's conditions fit",
			old:  statusVersion(oldConditions()), new: statusVersion(newConditions()),
			spec: `{}`, status: healthy,
		},
		{
			name: "status moves to metav1.Condition: reason newly required, heartbeat pruned, type too long",
			old:  statusVersion(oldConditions()), new: statusVersion(newConditions()),
			spec: `{}`,
			status: `{"conditions": [
				{"type": "Ready", "status": "True", "reason": "Ok", "message": "fine", "lastTransitionTime": "2024-01-01T00:00:00Z"},
				{"type": "Snapshotting", "status": "False", "message": "", "lastHeartbeatTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"},
				{"type": "` + strings.Repeat("x", 317) + `", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}`,
			want: []problem{
				{kind: KindInvalid, path: ".status.conditions[*].reason", detail: "status.conditions[1].reason: Required value"},
				{kind: KindInvalid, path: ".status.conditions[*].type", detail: "status.conditions[2].type: Too long: may not be more than 316 bytes"},
				{kind: KindPruned, path: ".status.conditions[*].lastHeartbeatTime", detail: "status.conditions[1].lastHeartbeatTime: value would be pruned"},
			},
		},
		{
			name: "maxLength tightened: only the object's too long value fails",
			old:  version("v1", object(props{"color": str()})), new: version("v1", object(props{"color": withLength(str(), nil, i64(4))})),
			spec: `{"color": "yellow"}`,
			want: []problem{{kind: KindInvalid, path: ".spec.color", detail: `spec.color: Too long: may not be more than 4 bytes`}},
		},
		{
			name: "already too long before: not the change's fault",
			old:  version("v1", object(props{"color": withLength(str(), nil, i64(5))})), new: version("v1", object(props{"color": withLength(str(), nil, i64(4))})),
			spec: `{"color": "yellow"}`,
		},
		{
			name: "field removed without a value: nothing pruned",
			old:  version("v1", spec), new: version("v1", object(props{"color": str(), "labels": mapOf(object(props{"v": str()}))})),
			spec: `{"color": "red"}`,
		},
		{
			name: "field removed with a value",
			old:  version("v1", spec), new: version("v1", object(props{"color": str(), "labels": mapOf(object(props{"v": str()}))})),
			spec: `{"color": "red", "size": 3}`,
			want: []problem{{kind: KindPruned, path: ".spec.size", detail: "spec.size: value would be pruned"}},
		},
		{
			name: "map value field removed: the path names any key",
			old:  version("v1", spec), new: version("v1", object(props{"color": str(), "size": integer(), "labels": mapOf(object(props{}))})),
			spec: `{"labels": {"a": {"v": "x"}, "b": {"v": "y"}}}`,
			want: []problem{{kind: KindPruned, path: ".spec.labels.*.v", detail: "spec.labels.a.v: value would be pruned"}},
		},
		{
			name: "map value made required: the path names any key",
			old:  version("v1", spec), new: version("v1", object(props{"labels": mapOf(object(props{"v": str()}, "v"))})),
			spec: `{"labels": {"a": {}}}`,
			want: []problem{{kind: KindInvalid, path: ".spec.labels.*.v", detail: "spec.labels.a.v: Required value"}},
		},
		{
			name: "newly required field with a default: filled, as the API server does",
			old:  version("v1", object(props{"tier": str()})), new: version("v1", object(props{"tier": withDefault(str(), `"gold"`)}, "tier")),
			spec: `{}`,
		},
		{
			name: "enum narrowed",
			old:  version("v1", object(props{"mode": enum(`"fast"`, `"slow"`)})), new: version("v1", object(props{"mode": enum(`"slow"`)})),
			spec: `{"mode": "fast"}`,
			want: []problem{{kind: KindInvalid, path: ".spec.mode", detail: `spec.mode: Unsupported value: "fast": supported values: "slow"`}},
		},
		{
			name: "version without schema before",
			old:  apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}, new: version("v1", object(props{"size": integer()})),
			spec: `{"size": "big"}`,
			want: []problem{{kind: KindInvalid, path: ".spec.size", detail: `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc, err := newVersionCheck(&tt.old, &tt.new)
			if err != nil {
				t.Fatal(err)
			}
			obj := widget("example.com/v1", "ns", "w", tt.spec)
			if tt.status != "" {
				obj = withStatusJSON(obj, tt.status)
			}
			before := obj.DeepCopy()
			got, err := vc.check(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("check() =\n%#v\nwant\n%#v", got, tt.want)
			}
			if !reflect.DeepEqual(obj.Object, before.Object) {
				t.Errorf("check() changed the object: %v, was %v", obj.Object, before.Object)
			}
		})
	}
}

// TestNewVersionCheckErrors: a schema the API server could not use.
func TestNewVersionCheckErrors(t *testing.T) {
	good := version("v1", object(props{"a": str()}))
	bad := version("v1", object(props{"a": {Type: "string", ID: "x"}}))
	if _, err := newVersionCheck(&good, &bad); err == nil {
		t.Error("newVersionCheck() with an unsupported schema field: no error")
	}
}
