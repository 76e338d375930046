package message

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
		cut   bool
	}{
		{name: "fits", in: "short", limit: 10, want: "short"},
		{name: "exactly the limit", in: strings.Repeat("a", 10), limit: 10, want: strings.Repeat("a", 10)},
		{name: "one over", in: strings.Repeat("a", 40), limit: 39, want: strings.Repeat("a", 15) + "… (25 more characters)", cut: true},
		{name: "5,000 characters into an event", in: strings.Repeat("x", 5000), limit: EventNoteLimit,
			want: strings.Repeat("x", 998) + "… (4002 more characters)", cut: true},
		{name: "whole characters only", in: strings.Repeat("é", 30), limit: 40, want: strings.Repeat("é", 8) + "… (22 more characters)", cut: true},
		{name: "a limit smaller than the note", in: strings.Repeat("a", 30), limit: 5, want: "… (30 more characters)", cut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Cut(tt.in, tt.limit)
			if got != tt.want || cut != tt.cut {
				t.Fatalf("Cut() = %q, %v; want %q, %v", got, cut, tt.want, tt.cut)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Cut() = %q is not valid UTF-8", got)
			}
			if len(got) > tt.limit && tt.limit >= len(note(utf8.RuneCountInString(tt.in))) {
				t.Errorf("len(Cut()) = %d, over the limit %d", len(got), tt.limit)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	var conds []metav1.Condition
	long := strings.Repeat("collision; ", 5000)
	if !SetCondition(&conds, metav1.Condition{Type: "Installed", Status: metav1.ConditionFalse, Reason: "Collision", Message: long}) {
		t.Fatal("SetCondition() = false, want a change")
	}
	if n := len(conds[0].Message); n > ConditionMessageLimit || !strings.HasSuffix(conds[0].Message, "more characters)") {
		t.Fatalf("message of %d bytes ending %q, want it cut to %d", n, conds[0].Message[n-30:], ConditionMessageLimit)
	}
	if SetCondition(&conds, metav1.Condition{Type: "Installed", Status: metav1.ConditionFalse, Reason: "Collision", Message: long}) {
		t.Error("SetCondition() = true for the same condition again")
	}
}
