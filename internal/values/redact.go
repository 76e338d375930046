package values

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/rukpak/rukpak/pkg/failure"
)

// Redacted replaces a secret value in messages.
const Redacted = "[redacted]"

// MinSecretLen is the shortest secret value that is redacted: shorter
// strings ("true", "80") are too common to hide without making messages
// useless, and too short to be a credential.
const MinSecretLen = 4

// secretStrings returns the values of doc, a values document read from a
// Secret, that are redacted from messages: every string and number leaf
// of at least MinSecretLen characters.
func secretStrings(doc map[string]any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			out = append(out, v)
		case float64:
			out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
		case int64:
			out = append(out, strconv.FormatInt(v, 10))
		case json.Number:
			out = append(out, v.String())
		}
	}
	walk(doc)
	return normalize(out)
}

// AllStrings returns every string and number leaf of vals that Redact
// would hide: what to redact when it is not known which values came from
// Secrets.
func AllStrings(vals map[string]any) []string {
	return secretStrings(vals)
}

// normalize drops short and duplicate strings and sorts the rest, longest
// first, so that a secret containing another is replaced whole.
func normalize(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if len(s) < MinSecretLen || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// forms returns the ways secret may appear in a message: as is, quoted
// or escaped (Go's %q, JSON), base64-encoded (b64enc), and line by line
// when it has several lines (messages are often joined into one line).
func forms(secret string) []string {
	out := []string{secret}
	if q := strconv.Quote(secret); q[1:len(q)-1] != secret {
		out = append(out, q[1:len(q)-1])
	}
	if j, err := json.Marshal(secret); err == nil && string(j[1:len(j)-1]) != secret {
		out = append(out, string(j[1:len(j)-1]))
	}
	out = append(out, base64.StdEncoding.EncodeToString([]byte(secret)))
	if strings.Contains(secret, "\n") {
		for _, line := range strings.Split(secret, "\n") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// Redact returns msg with every form of every secret replaced by
// Redacted.
func Redact(msg string, secrets []string) string {
	if len(secrets) == 0 {
		return msg
	}
	var all []string
	for _, s := range secrets {
		all = append(all, forms(s)...)
	}
	for _, s := range normalize(all) {
		msg = strings.ReplaceAll(msg, s, Redacted)
	}
	return msg
}

// RedactError returns err with secrets redacted from its message: a
// *failure.Error keeps its reason, any other error becomes a plain error
// with the redacted message (wrapping is lost: the wrapped errors hold the
// secret too). It returns err itself when there is nothing to redact.
func RedactError(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := Redact(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	if f := failure.As(err); f != nil {
		return &failure.Error{Reason: f.Reason, Message: msg}
	}
	return errors.New(msg)
}
