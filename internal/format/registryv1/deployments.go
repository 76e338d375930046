package registryv1

import (
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TargetNamespacesAnnotation is the pod template annotation that tells an
// operator the namespaces it watches, comma-separated; "" means all.
const TargetNamespacesAnnotation = "olm.targetNamespaces"

// OperatorNamespaceAnnotation is the pod template annotation that tells an
// operator the namespace it is installed in, as OLM sets it.
const OperatorNamespaceAnnotation = "olm.operatorNamespace"

// deployment renders the CSV's deployment d in installNamespace for an
// operator watching targets. The spec is kept as written except for the pod
// template's annotations: the CSV's annotations under the template's own,
// TargetNamespacesAnnotation and OperatorNamespaceAnnotation.
func deployment(csv *clusterServiceVersion, d csvDeployment, installNamespace string, targets []string) (*unstructured.Unstructured, error) {
	spec := map[string]any{}
	if err := utiljson.Unmarshal(d.Spec, &spec); err != nil {
		return nil, invalidCSV(csv.Metadata.Name, "spec of Deployment %s: %v", d.Name, err)
	}
	template := childObject(spec, "template")
	meta := childObject(template, "metadata")
	if v, ok := meta["creationTimestamp"]; ok && v == nil {
		delete(meta, "creationTimestamp") // noise of generated CSVs
	}
	annotations := map[string]any{}
	for k, v := range csv.Metadata.Annotations {
		annotations[k] = v
	}
	if own, ok := meta["annotations"].(map[string]any); ok {
		maps.Copy(annotations, own)
	}
	annotations[TargetNamespacesAnnotation] = strings.Join(targets, ",")
	annotations[OperatorNamespaceAnnotation] = installNamespace
	meta["annotations"] = annotations

	obj := newObject("apps/v1", "Deployment", installNamespace, d.Name)
	if len(d.Label) > 0 {
		labels := make(map[string]any, len(d.Label))
		for k, v := range d.Label {
			labels[k] = v
		}
		obj.Object["metadata"].(map[string]any)["labels"] = labels
	}
	obj.Object["spec"] = spec
	return obj, nil
}

// childObject returns the object field key of parent, adding an empty one
// if it is missing or null. Decoding the spec as a DeploymentSpec made sure
// it is not of another type.
func childObject(parent map[string]any, key string) map[string]any {
	child, ok := parent[key].(map[string]any)
	if !ok {
		child = map[string]any{}
		parent[key] = child
	}
	return child
}
