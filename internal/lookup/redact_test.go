package lookup

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSecretStrings(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   []string
	}{
		{"a Secret: as is and decoded", `{"apiVersion":"v1","kind":"Secret","data":{"a":"c2VjcmV0LWE=","b":"c2VjcmV0LWI="}}`,
			[]string{"c2VjcmV0LWE=", "c2VjcmV0LWI=", "secret-a", "secret-b"}},
		{"a list of Secrets", `{"apiVersion":"v1","kind":"SecretList","items":[{"data":{"a":"c2VjcmV0LWE="}},{"data":{"b":"c2VjcmV0LWI="}}]}`,
			[]string{"c2VjcmV0LWE=", "c2VjcmV0LWI=", "secret-a", "secret-b"}},
		{"data that is not base64 is kept as is", `{"apiVersion":"v1","kind":"Secret","data":{"a":"not base64!"}}`,
			[]string{"not base64!"}},
		{"a ConfigMap", `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"public"}}`, nil},
		{"a Secret of another group", `{"apiVersion":"example.com/v1","kind":"Secret","data":{"a":"public"}}`, nil},
		{"not found", `{}`, nil},
		{"data that is not strings", `{"apiVersion":"example.com/v1","kind":"Thing","data":{"a":1}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SecretStrings(map[string]json.RawMessage{"q": json.RawMessage(tt.answer)})
			if !slices.Equal(got, tt.want) {
				t.Errorf("SecretStrings = %q, want %q", got, tt.want)
			}
		})
	}
}
