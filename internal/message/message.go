package message

import (
	"fmt"
	"unicode/utf8"
)

// Limits of the API server, in bytes (a limit in characters is never
// smaller).
const (
	// EventNoteLimit is the most an event's note (message) may hold: the
	// events.k8s.io/v1 validation's limit, which also applies to core/v1
	// events written through it.
	EventNoteLimit = 1024
	// ConditionMessageLimit is the most a metav1.Condition's message may
	// hold (its schema's maxLength).
	ConditionMessageLimit = 32768
)

// Cut returns s if it fits in limit bytes, else the longest prefix of s
// (whole UTF-8 characters) that fits together with a note of how many
// characters were left out, and true.
func Cut(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	// The note is longest when everything is left out.
	room := limit - len(note(utf8.RuneCountInString(s)))
	if room < 0 {
		room = 0
	}
	end := room
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + note(utf8.RuneCountInString(s[end:])), true
}

// note says that n characters were left out.
func note(n int) string {
	return fmt.Sprintf("… (%d more characters)", n)
}
