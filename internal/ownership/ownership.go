package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// hashLength is how many hex digits follow the BundleDeployment's name in
// a revision's name.
const hashLength = 10

// RevisionName is the name of BundleDeployment bdName's revision of spec:
// the name, '-', and the first hashLength hex digits of SpecDigest. Anyone
// who can read the sources can compute it, which is why a name proves
// nothing (Check); and 40 bits can be made to collide, which is why a
// name is never what an approval, a kept record or a memo of a revision
// binds to: they bind to SpecDigest (and ApprovalDigest), in full.
func RevisionName(bdName string, spec v1alpha2.BundleSpec, valuesDigest string) string {
	return bdName + "-" + strings.TrimPrefix(SpecDigest(spec, valuesDigest), digestPrefix)[:hashLength]
}

// digestPrefix starts every digest this package returns.
const digestPrefix = "sha256:"

// SpecDigest is the full digest ("sha256:<64 hex>") of everything that
// makes up a revision: class, pinned sources, config and the digest of
// the resolved Helm values (so that a change of a valuesFrom object is an
// upgrade).
func SpecDigest(spec v1alpha2.BundleSpec, valuesDigest string) string {
	b, _ := json.Marshal(struct {
		Class   string                  `json:"class"`
		Sources []v1alpha2.BundleSource `json:"sources"`
		Config  *v1alpha2.BundleConfig  `json:"config,omitempty"`
		Values  string                  `json:"values,omitempty"`
	}{spec.ProvisionerClassName, spec.Sources, spec.Config, valuesDigest})
	sum := sha256.Sum256(b)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// ApprovalDigest is the digest an approval of a revision names
// (v1alpha2.AnnotationApproveRevision, status.review.digest): of the
// revision's SpecDigest, the digest of its unpacked content and the
// digest of its rendered objects (ObjectsDigest), each in full. Two
// revisions that differ in any of them differ here, whatever their names.
func ApprovalDigest(specDigest, contentDigest, objectsDigest string) string {
	b, _ := json.Marshal(struct {
		Version string `json:"v"`
		Spec    string `json:"spec"`
		Content string `json:"content"`
		Objects string `json:"objects"`
	}{"rukpak.approval/v1", specDigest, contentDigest, objectsDigest})
	sum := sha256.Sum256(b)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// ObjectsDigest is the full digest of rendered objects, in order: each
// object's JSON (maps with sorted keys), length-prefixed.
func ObjectsDigest(objs []map[string]any) (string, error) {
	h := sha256.New()
	for i, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			return "", fmt.Errorf("encoding rendered object %d: %w", i, err)
		}
		fmt.Fprintf(h, "%d\n", len(b))
		h.Write(b)
	}
	return digestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// IsRevisionName reports whether name has the form of a revision of the
// BundleDeployment bdName: bdName, '-', and hashLength lowercase hex digits.
func IsRevisionName(bdName, name string) bool {
	rest, ok := strings.CutPrefix(name, bdName+"-")
	if !ok || len(rest) != hashLength {
		return false
	}
	return strings.Trim(rest, "0123456789abcdef") == ""
}

// Check returns nil when b is a revision bd created: controlled by bd
// (same UID), labelled and named for it, of bd's class and, when writers
// is not empty, written by one of writers (the manager's user names, as
// the requested-by annotation records them). Otherwise it returns a
// failure with reason BundleNotOwned naming the Bundle and why.
func Check(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle, writers []string) error {
	if why := controllerMismatch(bd, b); why != "" {
		return refuse(bd, b, why)
	}
	if got := b.Labels[v1alpha2.LabelBundleDeployment]; got != bd.Name {
		return refuse(bd, b, fmt.Sprintf("it is labelled %s=%q", v1alpha2.LabelBundleDeployment, got))
	}
	if !IsRevisionName(bd.Name, b.Name) {
		return refuse(bd, b, fmt.Sprintf("its name is not %s-<%d hex digits>", bd.Name, hashLength))
	}
	if len(writers) > 0 {
		if w := b.Annotations[v1alpha2.AnnotationRequestedBy]; !slices.Contains(writers, w) {
			return refuse(bd, b, fmt.Sprintf("it was written by %q, not by rukpak", w))
		}
	}
	if b.Spec.ProvisionerClassName != bd.Spec.ProvisionerClassName {
		return refuse(bd, b, fmt.Sprintf("its class %s is not the BundleDeployment's %s", b.Spec.ProvisionerClassName, bd.Spec.ProvisionerClassName))
	}
	return nil
}

// CheckSpec returns nil when b passes Check and holds exactly want (the
// revision about to be installed: class, pinned sources and config).
func CheckSpec(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle, want v1alpha2.BundleSpec, writers []string) error {
	if err := Check(bd, b, writers); err != nil {
		return err
	}
	var differ []string
	if !equality.Semantic.DeepEqual(b.Spec.Sources, want.Sources) {
		differ = append(differ, "sources")
	}
	if !equality.Semantic.DeepEqual(b.Spec.Config, want.Config) {
		differ = append(differ, "config")
	}
	switch {
	case len(differ) == 2:
		return refuse(bd, b, "its sources and config differ from the pinned ones")
	case len(differ) == 1 && differ[0] == "config":
		return refuse(bd, b, "its config differs from the pinned one")
	case len(differ) == 1:
		return refuse(bd, b, "its sources differ from the pinned ones")
	}
	return nil
}

// Controlled reports whether b's controller ownerReference is bd (by UID):
// the test for deleting a Bundle in history cleanup and on uninstall.
func Controlled(bd metav1.Object, b metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(b)
	return ref != nil && isBundleDeployment(ref) && ref.Name == bd.GetName() && ref.UID == bd.GetUID()
}

// StampedOut reports whether b says it is a revision of a BundleDeployment:
// its controller ownerReference names one. Such a Bundle is unpacked and
// reported by that BundleDeployment's controller, which checks that it
// really is its own (Check) before it uses it; the Bundle controller leaves
// it alone but for its content when it is deleted. A forged reference only
// means the Bundle is never unpacked.
func StampedOut(b metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(b)
	return ref != nil && isBundleDeployment(ref)
}

// controllerMismatch says how b's controller differs from bd, or "".
func controllerMismatch(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) string {
	ref := metav1.GetControllerOfNoCopy(b)
	switch {
	case ref == nil:
		return "it has no controller"
	case !isBundleDeployment(ref):
		return fmt.Sprintf("its controller is %s %s", ref.Kind, ref.Name)
	case ref.Name != bd.Name:
		return fmt.Sprintf("its controller is BundleDeployment %s", ref.Name)
	case ref.UID != bd.UID:
		return fmt.Sprintf("its controller is a BundleDeployment %s with uid %s, not this one (uid %s): one deleted before, or a forged reference", ref.Name, ref.UID, bd.UID)
	}
	return ""
}

func isBundleDeployment(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == v1alpha2.GroupVersion.Group && ref.Kind == v1alpha2.BundleDeploymentKind
}

func refuse(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle, why string) error {
	return failure.New(v1alpha2.ReasonBundleNotOwned, "Bundle %s is not a revision created by BundleDeployment %s: %s; rukpak does not install, re-apply or delete it", b.Name, bd.Name, why)
}

// RevisionNumber returns the revision number of Bundle b (its
// v1alpha2.LabelRevision label): 1 for a BundleDeployment's first
// revision, growing by one with each new one; 0 when b has none (a Bundle
// created on its own, or a revision created before revisions were
// numbered) or its label is not a positive decimal number. The number is
// only as trustworthy as b: read it from a Bundle that passed Check.
func RevisionNumber(b metav1.Object) int {
	v, ok := b.GetLabels()[v1alpha2.LabelRevision]
	if !ok || v == "" || len(v) > maxRevisionDigits || strings.Trim(v, "0123456789") != "" || v[0] == '0' {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

// maxRevisionDigits bounds the label RevisionNumber reads.
const maxRevisionDigits = 9

// NextRevisionNumber returns the number of bd's next revision: one more
// than the highest number among bd's revisions (Bundles that pass Check
// with writers; a Bundle planted with a large number counts for nothing)
// and at least, the number last handed out by this process (which the
// caller keeps: its cache may not show a Bundle created just before).
func NextRevisionNumber(bd *v1alpha2.BundleDeployment, bundles []v1alpha2.Bundle, writers []string, last int) int {
	highest := last
	for i := range bundles {
		b := &bundles[i]
		if Check(bd, b, writers) != nil {
			continue
		}
		highest = max(highest, RevisionNumber(b))
	}
	return highest + 1
}
