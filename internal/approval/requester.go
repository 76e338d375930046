package approval

import (
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Requester returns who last created or changed obj's spec (a
// BundleDeployment or a Bundle), from the requested-by annotations. ok is
// false when obj has no (or an empty) core.rukpak.io/requested-by
// annotation. The groups are decoded with DecodeGroups.
func Requester(obj metav1.Object) (user string, groups []string, ok bool) {
	annotations := obj.GetAnnotations()
	user = annotations[v1alpha2.AnnotationRequestedBy]
	if user == "" {
		return "", nil, false
	}
	return user, DecodeGroups(annotations[v1alpha2.AnnotationRequestedByGroups]), true
}

// RequesterAnnotations are the requested-by annotations that record user
// as a requester, as the MutatingAdmissionPolicy rukpak-requested-by
// writes them (Requester reads them back); nil for a user without a name.
func RequesterAnnotations(user authenticationv1.UserInfo) map[string]string {
	if user.Username == "" {
		return nil
	}
	return map[string]string{
		v1alpha2.AnnotationRequestedBy:       user.Username,
		v1alpha2.AnnotationRequestedByGroups: EncodeGroups(user.Groups),
	}
}

// EncodeGroups is the value of the requested-by-groups annotation for
// groups, as the MutatingAdmissionPolicy rukpak-requested-by writes it:
// in each group '\' becomes `\\` and ',' becomes `\,`, and the groups are
// joined with ','. A group name holding a comma is therefore kept whole.
func EncodeGroups(groups []string) string {
	escaped := make([]string, len(groups))
	for i, g := range groups {
		escaped[i] = strings.ReplaceAll(strings.ReplaceAll(g, `\`, `\\`), `,`, `\,`)
	}
	return strings.Join(escaped, ",")
}

// DecodeGroups reverses EncodeGroups: it splits at every ',' not escaped
// by '\' and unescapes `\\` and `\,`. Empty entries are dropped, and a
// '\' at the end of the value is kept as it is.
func DecodeGroups(value string) []string {
	var groups []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			groups = append(groups, cur.String())
		}
		cur.Reset()
	}
	for i := 0; i < len(value); i++ {
		switch c := value[i]; {
		case c == '\\' && i+1 < len(value):
			i++
			cur.WriteByte(value[i])
		case c == ',':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return groups
}
