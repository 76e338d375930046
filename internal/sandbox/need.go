package sandbox

import (
	"encoding/json"
	"fmt"
)

// Need is the error of a job that cannot finish without something only
// the parent can give it (say, answers to the cluster reads a chart
// makes, which the child has no credentials for): what it needs, as JSON,
// crosses to the parent intact. A job returns one made with NewNeed (or
// wrapping one); the parent's Run returns it as a *Need, and the caller
// decodes Data into the type the job encoded, by Kind.
type Need struct {
	// Kind names what is needed, so that the caller knows what Data holds.
	Kind string `json:"kind"`
	// Data is what is needed, as JSON.
	Data json.RawMessage `json:"data"`
	// Message says what is needed, in words.
	Message string `json:"message"`
}

// NewNeed returns a Need of kind holding v as JSON, described by message.
func NewNeed(kind string, v any, message string) (*Need, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding what the job needs (%s): %w", kind, err)
	}
	return &Need{Kind: kind, Data: data, Message: message}, nil
}

// Error returns the message.
func (n *Need) Error() string { return n.Message }

// Decode decodes Data into v.
func (n *Need) Decode(v any) error {
	if err := json.Unmarshal(n.Data, v); err != nil {
		return fmt.Errorf("decoding what the job needs (%s): %w", n.Kind, err)
	}
	return nil
}
