package apply

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/rukpak/rukpak/internal/inventory"
)

func TestRefuse(t *testing.T) {
	id := func(name string) inventory.ID {
		return inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}
	}
	refusal := func(name string) Refusal {
		return Refusal{ID: id(name), Code: CodeRefused, Message: fmt.Sprintf("object %s: bad", id(name))}
	}
	tests := []struct {
		name        string
		in          Refusals
		format      string
		args        []any
		wantMessage string
		wantOrder   []string
	}{
		{
			name:        "one",
			in:          Refusals{refusal("a")},
			format:      "server-side validation refused %d object(s), nothing was applied: %s",
			wantMessage: "server-side validation refused 1 object(s), nothing was applied: object ConfigMap ns/a: bad",
			wantOrder:   []string{"a"},
		},
		{
			name:        "sorted by message",
			in:          Refusals{refusal("c"), refusal("a"), refusal("b")},
			format:      "%d: %s",
			wantMessage: "3: object ConfigMap ns/a: bad; object ConfigMap ns/b: bad; object ConfigMap ns/c: bad",
			wantOrder:   []string{"a", "b", "c"},
		},
		{
			name:        "five named, the rest counted; all kept",
			in:          Refusals{refusal("g"), refusal("f"), refusal("e"), refusal("d"), refusal("c"), refusal("b"), refusal("a")},
			format:      "%d: %s",
			wantMessage: "7: object ConfigMap ns/a: bad; object ConfigMap ns/b: bad; object ConfigMap ns/c: bad; object ConfigMap ns/d: bad; object ConfigMap ns/e: bad; and 2 more",
			wantOrder:   []string{"a", "b", "c", "d", "e", "f", "g"},
		},
		{
			name:        "further arguments",
			in:          Refusals{refusal("a")},
			format:      "%d object(s) collide: %s; %d object(s) written before that stay applied",
			args:        []any{2},
			wantMessage: "1 object(s) collide: object ConfigMap ns/a: bad; 2 object(s) written before that stay applied",
			wantOrder:   []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append(Refusals(nil), tt.in...)
			e := refuse(CodeRefused, tt.in, tt.format, tt.args...)
			if e.Message != tt.wantMessage {
				t.Errorf("Message = %q, want %q", e.Message, tt.wantMessage)
			}
			var order []string
			for _, r := range e.Refusals {
				order = append(order, r.ID.Name)
			}
			if !reflect.DeepEqual(order, tt.wantOrder) {
				t.Errorf("Refusals = %v, want %v", order, tt.wantOrder)
			}
			if !reflect.DeepEqual(tt.in, in) {
				t.Errorf("refuse changed its argument: %v, was %v", tt.in, in)
			}
		})
	}
}

func TestErrorHeld(t *testing.T) {
	a := inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	b := inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "b"}
	tests := []struct {
		name     string
		refusals Refusals
		want     []Held
	}{
		{name: "none"},
		{name: "not held", refusals: Refusals{{ID: a, Code: CodeCollision, Message: "object a exists"}}},
		{
			name: "held ones only",
			refusals: Refusals{
				{ID: a, Code: CodeCollision, Message: "object a exists"},
				{ID: b, Code: CodeCollision, Message: "object b is managed by other", HeldBy: "other"},
			},
			want: []Held{{ID: b, By: "other"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs collisions
			for _, r := range tt.refusals {
				cs.add(item{id: r.ID}, collision{why: r.Message, heldBy: r.HeldBy})
			}
			e := cs.refusal("%d object(s) collide, nothing was applied: %s")
			if got := e.Held(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Held() = %+v, want %+v", got, tt.want)
			}
			if e.Code != CodeCollision || len(e.Refusals) != len(tt.refusals) {
				t.Errorf("= code %v, %d refusals; want Collision, %d", e.Code, len(e.Refusals), len(tt.refusals))
			}
		})
	}
}
