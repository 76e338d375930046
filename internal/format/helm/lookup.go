package helm

import (
	"encoding/json"
	"fmt"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rukpak/rukpak/pkg/format"
)

// lookups answers the lookup calls of one render from Config.Lookups and
// records the queries it has no answer to. Templates never read the
// cluster: whoever runs the format answers the recorded queries and
// renders again (see format.LookupsNeeded).
type lookups struct {
	// answers are Config.Lookups; nil means offline: every lookup finds
	// nothing and none is recorded.
	answers map[string]json.RawMessage
	// missing are the unanswered queries, each once, in call order.
	missing []format.LookupQuery
	seen    map[string]bool
}

// newLookups returns the lookups of a render with answers (nil: offline).
func newLookups(answers map[string]json.RawMessage) *lookups {
	return &lookups{answers: answers, seen: map[string]bool{}}
}

// lookup is Helm's lookup function: the answer to the query as a fresh
// map (a template may change what it is given), or an empty map when the
// object does not exist, the render is offline or the answer is not known
// yet (the query is then recorded).
func (l *lookups) lookup(apiVersion, kind, namespace, name string) (map[string]any, error) {
	if l.answers == nil {
		return map[string]any{}, nil
	}
	q := format.LookupQuery{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}
	key := q.Key()
	raw, ok := l.answers[key]
	if !ok {
		if !l.seen[key] {
			l.seen[key] = true
			l.missing = append(l.missing, q)
		}
		return map[string]any{}, nil
	}
	// As client-go decodes objects: integers are int64.
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return map[string]any{}, fmt.Errorf("%s: the answer is not a JSON object: %w", q, err)
	}
	if obj == nil {
		obj = map[string]any{}
	}
	return obj, nil
}

// needed returns the error naming the unanswered queries, or nil.
func (l *lookups) needed() error {
	if len(l.missing) == 0 {
		return nil
	}
	return &format.LookupsNeeded{Queries: l.missing}
}
