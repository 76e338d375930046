package values

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestSecretStrings(t *testing.T) {
	doc := mustYAML(t, `
password: hunter22
short: abc
port: 5432
ratio: 0.125
enabled: true
nested: {token: tok-123456, list: [first-item, x]}
dup: hunter22
`)
	want := []string{"first-item", "tok-123456", "hunter22", "0.125", "5432"}
	if got := secretStrings(doc); !reflect.DeepEqual(got, want) {
		t.Fatalf("secretStrings = %q, want %q", got, want)
	}
}

func TestRedact(t *testing.T) {
	secrets := []string{"hunter22", "line-one\nline-two", "pa\"ss"}
	tests := []struct {
		name, msg, want string
	}{
		{"as is", "error calling fail: hunter22", "error calling fail: [redacted]"},
		{"twice", "hunter22/hunter22", "[redacted]/[redacted]"},
		{"quoted", `value "pa\"ss" is invalid`, `value "[redacted]" is invalid`},
		{"base64", "bad: aHVudGVyMjI=", "bad: [redacted]"},
		{"lines joined", "fail: line-one line-two", "fail: [redacted] [redacted]"},
		{"escaped newline", `fail: "line-one\nline-two"`, `fail: "[redacted]"`},
		{"nothing to hide", "template: x.yaml:1: bad", "template: x.yaml:1: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.msg, secrets); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestRedactError(t *testing.T) {
	secrets := []string{"hunter22"}
	f := RedactError(fmt.Errorf("rendering: %w", failure.New(v1alpha2.ReasonRenderFailed, "fail: hunter22")), secrets)
	if failure.Reason(f, "") != v1alpha2.ReasonRenderFailed || f.Error() != "rendering: fail: [redacted]" {
		t.Fatalf("RedactError of a failure = %v (%s)", f, failure.Reason(f, "-"))
	}
	plain := RedactError(errors.New("hunter22"), secrets)
	if failure.As(plain) != nil || plain.Error() != "[redacted]" {
		t.Fatalf("RedactError of a plain error = %v", plain)
	}
	same := errors.New("nothing")
	if RedactError(same, secrets) != same || RedactError(nil, secrets) != nil { //nolint:errorlint // the very error, not one that wraps it
		t.Fatal("an error without secrets must be returned as is")
	}
}

func TestSecretFields(t *testing.T) {
	got := secretFields([]byte("password: 'hunter22'\nlist: [abc, token-1]\n"))
	for _, w := range []string{"hunter22", "token-1", "password"} {
		if !strings.Contains(strings.Join(got, " "), w) {
			t.Fatalf("secretFields = %q, want %q among them", got, w)
		}
	}
}
