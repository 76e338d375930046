package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// stagesFile is kwok's stage configuration in the binary directory, written
// by hack/build-cluster-bins.sh from the stages kwok's module ships.
const stagesFile = "kwok-stages.yaml"

// requiredStages are the resource kinds and stage name prefixes a stage
// configuration must cover: a Node must be initialised and then kept
// alive by a heartbeat, and Pods must become Ready.
var requiredStages = []struct{ kind, prefix string }{
	{"Node", "node-initialize"},
	{"Node", "node-heartbeat"},
	{"Pod", "pod-ready"},
}

// checkStages refuses a stage configuration that lacks a required stage,
// such as one without the node heartbeat: with it, the Node would go
// NotReady about a minute after start and every Pod would lose Ready for
// good.
func checkStages(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading kwok stages: %w", err)
	}
	have := map[string]bool{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("decoding kwok stages %s: %w", path, err)
		}
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		kind, _, _ := unstructured.NestedString(obj, "spec", "resourceRef", "kind")
		if u.GetKind() != "Stage" || kind == "" {
			continue
		}
		for _, r := range requiredStages {
			if kind == r.kind && strings.HasPrefix(u.GetName(), r.prefix) {
				have[r.prefix] = true
			}
		}
	}
	for _, r := range requiredStages {
		if !have[r.prefix] {
			return fmt.Errorf("kwok stages %s have no %s stage for %ss (written by an older hack/build-cluster-bins.sh): run `make cluster-bins` to regenerate them", path, r.prefix, r.kind)
		}
	}
	return nil
}
