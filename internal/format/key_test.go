package format

import "testing"

func TestObjectKeyString(t *testing.T) {
	for _, tc := range []struct {
		key  ObjectKey
		want string
	}{
		{ObjectKey{Kind: "ConfigMap", Name: "a"}, "ConfigMap/a"},
		{ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "a"}, "ConfigMap/a (namespace ns)"},
		{ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "d"}, "Deployment.apps/d (namespace ns)"},
	} {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		value any
		want  string
	}{
		{nil, "null"},
		{map[string]any{}, "an object"},
		{[]any{}, "a list"},
		{"s", "a string"},
		{true, "a boolean"},
		{int64(1), "a number"},
		{1.5, "a number"},
	} {
		if got := Describe(tc.value); got != tc.want {
			t.Errorf("Describe(%#v) = %q, want %q", tc.value, got, tc.want)
		}
	}
}
