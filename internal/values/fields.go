package values

import (
	"strings"
	"unicode"
)

// secretFields returns the words of a Secret's raw document that are
// redacted from a parser's message about it.
func secretFields(data []byte) []string {
	words := strings.FieldsFunc(string(data), func(r rune) bool {
		return unicode.IsSpace(r) || r == ':' || r == ',' || r == '"' || r == '\'' || r == '{' || r == '}' || r == '[' || r == ']'
	})
	return normalize(words)
}
