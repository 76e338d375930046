package review

import (
	"fmt"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// ObjectText names a reviewed object for people: "Kind name", or
// "Kind namespace/name" (rukpakctl review and rukpakctl ui print it).
func ObjectText(o v1alpha2.ReviewObject) string {
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return o.Kind + " " + o.Name
}

// SubjectText names a subject for people: "Kind name", or
// "ServiceAccount namespace/name".
func SubjectText(s v1alpha2.ReviewSubject) string {
	if s.Namespace != "" {
		return s.Kind + " " + s.Namespace + "/" + s.Name
	}
	return s.Kind + " " + s.Name
}

// RuleText is a reviewed rule in one line: its verbs, what it is about
// and where it applies.
func RuleText(r v1alpha2.ReviewRule) string {
	where := "cluster-wide"
	if r.Namespace != "" {
		where = "in namespace " + r.Namespace
	}
	what := "resources [" + strings.Join(r.Resources, ",") + "] of apiGroups [" + strings.Join(r.APIGroups, ",") + "]"
	if len(r.NonResourceURLs) > 0 {
		what = "nonResourceURLs [" + strings.Join(r.NonResourceURLs, ",") + "]"
	}
	if len(r.ResourceNames) > 0 {
		what += " named [" + strings.Join(r.ResourceNames, ",") + "]"
	}
	return fmt.Sprintf("%s %s %s", strings.Join(r.Verbs, ","), what, where)
}
