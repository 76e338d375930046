package lookup

import (
	"encoding/base64"
	"encoding/json"
	"sort"
)

// SecretStrings returns the values of the Secrets among answers (a Secret,
// or a SecretList's items): each key's value of data as it is (base64)
// and decoded. Whoever renders with answers adds them to
// format.Config.Redact, so that no error message shows them; Render does.
func SecretStrings(answers map[string]json.RawMessage) []string {
	var out []string
	for _, raw := range answers {
		out = append(out, secretStrings(raw)...)
	}
	sort.Strings(out)
	return out
}

// answerShape is what secretStrings reads of an answer.
type answerShape struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Data       map[string]string `json:"data"`
	Items      []answerShape     `json:"items"`
}

// secretStrings returns the values of the Secrets of one answer.
func secretStrings(raw json.RawMessage) []string {
	var a answerShape
	if json.Unmarshal(raw, &a) != nil {
		// Not a Secret: its data would decode as strings.
		return nil
	}
	var out []string
	add := func(s answerShape) {
		for _, v := range s.Data {
			out = append(out, v)
			if dec, err := base64.StdEncoding.DecodeString(v); err == nil {
				out = append(out, string(dec))
			}
		}
	}
	if a.APIVersion == "v1" && a.Kind == "SecretList" {
		for _, item := range a.Items {
			add(item)
		}
		return out
	}
	if a.APIVersion == "v1" && a.Kind == "Secret" {
		add(a)
	}
	return out
}
