package values

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"unicode"
)

// maxRemembered is how many resolved values' Secrets are remembered.
const maxRemembered = 4096

// remembered maps the digest of resolved values to the Secrets they hold,
// so that SecretsOf finds them from the values alone: callers carry
// Resolved.Values, not always Resolved.
var remembered = struct {
	sync.Mutex
	byDigest map[string][]string
	order    []string
}{byDigest: map[string][]string{}}

// remember records the secrets of the values of digest; values without
// secrets are not recorded. The oldest record goes when there are
// maxRemembered.
func remember(digest string, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	remembered.Lock()
	defer remembered.Unlock()
	if _, ok := remembered.byDigest[digest]; !ok {
		remembered.order = append(remembered.order, digest)
	}
	remembered.byDigest[digest] = secrets
	if len(remembered.order) > maxRemembered {
		delete(remembered.byDigest, remembered.order[0])
		remembered.order = remembered.order[1:]
	}
}

// SecretsOf returns the Secrets of vals, values returned by Resolve in
// this process; ok is false when they are not known (resolved elsewhere,
// or long ago), and the caller should then redact AllStrings(vals) if the
// config names any Secret.
func SecretsOf(vals map[string]any) (secrets []string, ok bool) {
	if vals == nil {
		return nil, true
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return nil, false
	}
	sum := sha256.Sum256(b)
	remembered.Lock()
	defer remembered.Unlock()
	secrets, ok = remembered.byDigest["sha256:"+hex.EncodeToString(sum[:])]
	return secrets, ok
}

// secretFields returns the words of a Secret's raw document that are
// redacted from a parser's message about it.
func secretFields(data []byte) []string {
	words := strings.FieldsFunc(string(data), func(r rune) bool {
		return unicode.IsSpace(r) || r == ':' || r == ',' || r == '"' || r == '\'' || r == '{' || r == '}' || r == '[' || r == ']'
	})
	return normalize(words)
}
