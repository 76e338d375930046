package apply

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rukpak/rukpak/internal/inventory"
)

// maxReported bounds how many refused objects Refusals.String names.
const maxReported = 5

// Refusal is one object of a plan that the plan was refused for.
type Refusal struct {
	// ID names the object.
	ID inventory.ID
	// Code is why: CodeForbidden, CodeUnknownKind, CodeImmutable or
	// CodeRefused from validation, CodeCollision when the plan may not
	// take the object over. An Error's own Code sums its Refusals up: an
	// Error of CodeRefused may hold Refusals of CodeImmutable too.
	Code Code
	// Message says what is wrong with the object; it names the object.
	Message string
	// HeldBy names the owner whose installed revision holds the object,
	// when that is why the plan may not take it (CodeCollision); ""
	// otherwise.
	HeldBy string
}

// Refusals are the objects a plan was refused for.
type Refusals []Refusal

// String joins the messages of the first maxReported (five) refusals
// with "; " and says how many more there are ("; and 3 more").
func (rs Refusals) String() string {
	msgs := make([]string, 0, min(len(rs), maxReported))
	for _, r := range rs[:min(len(rs), maxReported)] {
		msgs = append(msgs, r.Message)
	}
	msg := strings.Join(msgs, "; ")
	if len(rs) > maxReported {
		msg += fmt.Sprintf("; and %d more", len(rs)-maxReported)
	}
	return msg
}

// sorted returns rs sorted by message.
func (rs Refusals) sorted() Refusals {
	out := append(Refusals(nil), rs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Message < out[j].Message })
	return out
}

// refuse returns the Error of code that refuses a plan for rs (sorted by
// message): its message is format given the number of refusals and their
// String, then args.
func refuse(code Code, rs Refusals, format string, args ...any) *Error {
	rs = rs.sorted()
	e := newError(code, format, append([]any{len(rs), rs.String()}, args...)...)
	e.Refusals = rs
	return e
}

// collisions collects the collisions of a plan's objects (safe for the
// goroutines of one phase when the caller holds a lock) and makes the
// CodeCollision Error that refuses the plan.
type collisions struct {
	refusals Refusals
}

// add records that it's object collided (c is not the zero collision).
func (cs *collisions) add(it item, c collision) {
	cs.refusals = append(cs.refusals, Refusal{ID: it.id, Code: CodeCollision, Message: c.why, HeldBy: c.heldBy})
}

// any reports whether an object collided.
func (cs *collisions) any() bool { return len(cs.refusals) > 0 }

// refusal is the Error refusing the plan, its message a summary (format,
// given the count and the list of reasons, then args).
func (cs *collisions) refusal(format string, args ...any) *Error {
	return refuse(CodeCollision, cs.refusals, format, args...)
}
