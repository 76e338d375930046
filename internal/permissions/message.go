package permissions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// maxMessage bounds Message, in bytes.
const maxMessage = 2048

// Message describes missing rules for a status condition message, in a form
// an admin can paste into the rules: list of a Role (one per namespace) or
// a ClusterRole (the cluster-wide rules), for example:
//
//	ServiceAccount team-a/installer lacks 2 rule(s) this revision needs; nothing was applied. Grant them with a Role in namespace team-a: - {apiGroups: [""], resources: [secrets], verbs: [create, delete, get, list, patch, watch]}; and with a ClusterRole: - {apiGroups: [rbac.authorization.k8s.io], resources: [clusterrolebindings], verbs: [create, delete, get, list, patch, watch]}
//
// It is at most 2 KiB long: rules beyond are counted ("and N more rule(s);
// run rukpakctl preview NAME for the full list", NAME standing for the
// BundleDeployment). Message returns "" when nothing is missing.
func Message(subject Subject, missing []Rule) string {
	if len(missing) == 0 {
		return ""
	}
	sections := groupByNamespace(missing)
	var b strings.Builder
	fmt.Fprintf(&b, "%s lacks %d rule(s) this revision needs; nothing was applied.", subject, len(missing))
	shown := 0
	for i, s := range sections {
		intro := "; with a "
		switch {
		case i == 0:
			intro = " Grant them with a "
		case i == len(sections)-1:
			intro = "; and with a "
		}
		if s.namespace == "" {
			intro += "ClusterRole:"
		} else {
			intro += "Role in namespace " + s.namespace + ":"
		}
		for j, r := range s.rules {
			piece := " - " + flowRule(r)
			if j == 0 {
				piece = intro + piece
			}
			reserve := 0
			if shown+1 < len(missing) {
				reserve = len(moreRules(len(missing)))
			}
			if b.Len()+len(piece)+reserve > maxMessage {
				return finish(&b, shown, len(missing))
			}
			b.WriteString(piece)
			shown++
		}
	}
	return b.String()
}

// finish ends a message that shows only shown of total rules.
func finish(b *strings.Builder, shown, total int) string {
	if shown == 0 {
		fmt.Fprintf(b, " They are too many to list here; run rukpakctl preview NAME for the full list.")
		return b.String()
	}
	b.WriteString(moreRules(total - shown))
	return b.String()
}

// moreRules is the end of a message that leaves n rules out.
func moreRules(n int) string {
	return fmt.Sprintf("; and %d more rule(s); run rukpakctl preview NAME for the full list", n)
}

// section is the rules of one namespace ("" for the cluster-wide ones).
type section struct {
	namespace string
	rules     []Rule
}

// groupByNamespace splits rules into one section per namespace, in order of
// namespace, with the cluster-wide section last.
func groupByNamespace(rules []Rule) []section {
	sorted := append([]Rule(nil), rules...)
	sortRules(sorted)
	var sections []section
	var cluster *section
	for _, r := range sorted {
		if r.Namespace == "" {
			if cluster == nil {
				cluster = &section{}
			}
			cluster.rules = append(cluster.rules, r)
			continue
		}
		if n := len(sections); n == 0 || sections[n-1].namespace != r.Namespace {
			sections = append(sections, section{namespace: r.Namespace})
		}
		sections[len(sections)-1].rules = append(sections[len(sections)-1].rules, r)
	}
	if cluster != nil {
		sections = append(sections, *cluster)
	}
	return sections
}

// flowRule writes r as a YAML flow mapping.
func flowRule(r Rule) string {
	return fmt.Sprintf("{apiGroups: %s, resources: %s, verbs: %s}", flowList(r.APIGroups), flowList(r.Resources), flowList(r.Verbs))
}

// plainScalar matches strings YAML reads as themselves without quotes in a
// flow sequence.
var plainScalar = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9./_-]*$`)

// flowList writes items as a YAML flow sequence, quoting what needs it.
func flowList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		if plainScalar.MatchString(s) && !yamlKeyword(s) {
			quoted[i] = s
		} else {
			quoted[i] = strconv.Quote(s)
		}
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// yamlKeyword reports whether s would not read as a string unquoted.
func yamlKeyword(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		return true
	}
	return false
}
