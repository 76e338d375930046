package format

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LookupNotFound is the answer to a query that finds nothing (Helm's
// lookup of an object that does not exist): an empty object.
var LookupNotFound = json.RawMessage(`{}`)

// LookupQuery is one read of the cluster made by content during a render,
// with the arguments of Helm's lookup function.
type LookupQuery struct {
	// APIVersion is the kind's "group/version", or "v1" for the core group.
	APIVersion string `json:"apiVersion"`
	// Kind is the kind of the objects read.
	Kind string `json:"kind"`
	// Namespace is the namespace read; "" reads a cluster-scoped object
	// or, for a list of a namespaced kind, all namespaces. It is ignored
	// for cluster-scoped kinds.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name; "" lists the kind's objects (in
	// Namespace, or all namespaces when it is "").
	Name string `json:"name,omitempty"`
}

// IsList reports whether q lists objects rather than reading one.
func (q LookupQuery) IsList() bool { return q.Name == "" }

// Key returns q as a string that is the same for equal queries and
// differs for different ones whatever their fields hold: the key of its
// answer in Config.Lookups. It is a JSON array of the four fields.
func (q LookupQuery) Key() string {
	// Marshalling strings cannot fail.
	data, _ := json.Marshal([]string{q.APIVersion, q.Kind, q.Namespace, q.Name})
	return string(data)
}

// String returns q as a template would call it, for messages:
// lookup "v1" "Secret" "shop" "db".
func (q LookupQuery) String() string {
	return fmt.Sprintf("lookup %q %q %q %q", q.APIVersion, q.Kind, q.Namespace, q.Name)
}

// LookupsNeeded is the error of a render that made queries Config.Lookups
// holds no answer to. It is not a failure: whoever renders answers
// Queries and renders again.
type LookupsNeeded struct {
	// Queries are the unanswered queries, each once, in the order the
	// render first made them.
	Queries []LookupQuery
}

// Error names the queries.
func (e *LookupsNeeded) Error() string {
	names := make([]string, len(e.Queries))
	for i, q := range e.Queries {
		names[i] = q.String()
	}
	return "the render needs the answers of " + strings.Join(names, ", ")
}
