package health

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// probeFunc is a built-in probe for one group/kind.
type probeFunc func(obj *unstructured.Unstructured) Result

// builtins are the probes for kinds with well-known health semantics. Every
// other kind gets genericProbe, which leaves kinds without a Ready or
// Available condition to kstatus (sigs.k8s.io/cli-utils).
//
// kstatus has rules for most of these kinds too, but rukpak keeps its own
// where kstatus judges differently in a way users rely on (each difference
// is pinned by TestWhereKstatusDiffers):
//
//   - Deployment: rukpak follows `kubectl rollout status` and counts a
//     paused Deployment healthy once observed; kstatus waits for an update
//     a paused Deployment never makes, and also wants the Available and
//     Progressing conditions and every replica ready.
//   - StatefulSet: with OnDelete, kstatus is satisfied at once; rukpak
//     still wants every replica ready.
//   - DaemonSet: with OnDelete, kstatus wants every pod updated, which
//     only a user deleting pods brings about; rukpak does not.
//   - Job: kstatus counts a started Job as current; rukpak waits for it
//     to complete (a migration must finish before the revision is good).
//   - Pod: kstatus counts a Failed pod as current (completed); rukpak
//     counts it unhealthy with its message.
//   - APIService: kstatus has no rule for it and calls it current.
//   - CustomResourceDefinition, PersistentVolumeClaim: kstatus agrees on
//     the verdict, but its reasons say less ("Install in progress" for a
//     CRD whose Established condition carries the cause); the reasons
//     here name the condition or phase and the API server's message.
//
// The rules that read a condition (CRD, APIService, Pod and the generic
// Ready or Available) also distrust one written for an older generation,
// which kstatus takes at its word. kstatus calls any object with a
// deletionTimestamp Terminating; these rules judge its status as it is,
// as they always have.
var builtins = map[schema.GroupKind]probeFunc{
	{Group: "apps", Kind: "Deployment"}:                               deploymentProbe,
	{Group: "apps", Kind: "StatefulSet"}:                              statefulSetProbe,
	{Group: "apps", Kind: "DaemonSet"}:                                daemonSetProbe,
	{Group: "batch", Kind: "Job"}:                                     jobProbe,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: crdProbe,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             apiServiceProbe,
	{Group: "", Kind: "PersistentVolumeClaim"}:                        pvcProbe,
	{Group: "", Kind: "Pod"}:                                          podProbe,
}

// noHealth are kinds without health semantics: they are healthy as soon as
// they exist, so callers need not read them back unless a user probe
// selects them.
var noHealth = map[schema.GroupKind]bool{
	{Group: "", Kind: "ConfigMap"}:                                                    true,
	{Group: "", Kind: "Secret"}:                                                       true,
	{Group: "", Kind: "ServiceAccount"}:                                               true,
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "Service"}:                                                      true,
	{Group: "", Kind: "Endpoints"}:                                                    true,
	{Group: "", Kind: "LimitRange"}:                                                   true,
	{Group: "", Kind: "ResourceQuota"}:                                                true,
	{Group: "", Kind: "PodTemplate"}:                                                  true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:                                true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                               true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                                     true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:                                true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                    true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "coordination.k8s.io", Kind: "Lease"}:                                     true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:                           true,
	{Group: "apps", Kind: "ControllerRevision"}:                                       true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
}

// builtinProbe runs the built-in probe for obj's kind.
func builtinProbe(obj *unstructured.Unstructured) Result {
	if p, ok := builtins[obj.GroupVersionKind().GroupKind()]; ok {
		return p(obj)
	}
	return genericProbe(obj)
}

// genericProbe trusts a Ready condition, else an Available one, else what
// kstatus (sigs.k8s.io/cli-utils) makes of the object: its rules for
// well-known kinds and its generic ones (Reconciling or Stalled True means
// not done). Kinds none of these say anything about are healthy.
func genericProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, false); !r.Healthy {
		return r
	}
	for _, t := range []string{"Ready", "Available"} {
		if _, ok := findCondition(obj, t); ok {
			return conditionTrue(obj, t)
		}
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return healthy()
	}
	switch res.Status {
	case kstatus.InProgressStatus, kstatus.FailedStatus, kstatus.TerminatingStatus:
		return unhealthy("%s: %s", strings.ToLower(res.Status.String()), orDefault(res.Message, "no message"))
	}
	return healthy()
}

// jobProbe waits for a Job to complete.
func jobProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, false); !r.Healthy {
		return r
	}
	if c, ok := findCondition(obj, "Failed"); ok && c.Status == "True" {
		return unhealthy("job failed: %s", orDefault(c.Message, orDefault(c.Reason, "condition Failed is True")))
	}
	if c, ok := findCondition(obj, "Complete"); ok && c.Status == "True" {
		return healthy()
	}
	if c, ok := findCondition(obj, "Suspended"); ok && c.Status == "True" {
		return unhealthy("job suspended")
	}
	return unhealthy("job running: %d active, %d succeeded",
		intFieldOr(obj.Object, 0, "status", "active"),
		intFieldOr(obj.Object, 0, "status", "succeeded"))
}

// crdProbe requires a CRD to be Established with its names accepted.
func crdProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, false); !r.Healthy {
		return r
	}
	if c, ok := findCondition(obj, "NamesAccepted"); ok && c.Status == "False" {
		return unhealthy("%s", c.describe())
	}
	return conditionTrue(obj, "Established")
}

// apiServiceProbe requires an APIService to be Available.
func apiServiceProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, false); !r.Healthy {
		return r
	}
	return conditionTrue(obj, "Available")
}

// pvcProbe requires a PersistentVolumeClaim to be Bound.
func pvcProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, false); !r.Healthy {
		return r
	}
	if phase := stringField(obj.Object, "status", "phase"); phase != "Bound" {
		return unhealthy("phase is %s, want Bound", orDefault(phase, "unknown"))
	}
	return healthy()
}

// podProbe requires a Pod to be Ready or to have succeeded.
func podProbe(obj *unstructured.Unstructured) Result {
	if r := generationObserved(obj, false); !r.Healthy {
		return r
	}
	switch stringField(obj.Object, "status", "phase") {
	case "Succeeded":
		return healthy()
	case "Failed":
		return unhealthy("pod failed: %s", orDefault(
			stringField(obj.Object, "status", "message"),
			orDefault(stringField(obj.Object, "status", "reason"), "phase is Failed")))
	}
	return conditionTrue(obj, "Ready")
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
