package permissions

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Target is one object a revision manages.
type Target struct {
	// Resource is the object's group, version and resource (plural).
	Resource schema.GroupVersionResource
	// Namespace is the object's namespace; "" for cluster-scoped objects.
	Namespace string
	// Name is the object's name.
	Name string
}

// Subject is who is checked: a user and its groups, as the API server
// authenticates them.
type Subject struct {
	// User is the user name, e.g. system:serviceaccount:team-a:installer.
	User string
	// Groups are the groups the user is in.
	Groups []string
}

// serviceAccountPrefix starts the user name of every ServiceAccount.
const serviceAccountPrefix = "system:serviceaccount:"

// ServiceAccount returns the Subject of ServiceAccount namespace/name as the
// API server authenticates it: user system:serviceaccount:NS:NAME, groups
// system:serviceaccounts, system:serviceaccounts:NS and system:authenticated.
func ServiceAccount(namespace, name string) Subject {
	return Subject{
		User:   serviceAccountPrefix + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// serviceAccount returns the namespace and name of a ServiceAccount subject;
// ok is false for other users.
func (s Subject) serviceAccount() (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(s.User, serviceAccountPrefix)
	if !found {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// String returns "ServiceAccount NS/NAME" for a ServiceAccount subject and
// "user X" for any other.
func (s Subject) String() string {
	if ns, name, ok := s.serviceAccount(); ok {
		return "ServiceAccount " + ns + "/" + name
	}
	return "user " + s.User
}
