package permissions

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
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

// ServiceAccount returns the Subject of ServiceAccount namespace/name as the
// API server authenticates it: user system:serviceaccount:NS:NAME, groups
// system:serviceaccounts, system:serviceaccounts:NS and system:authenticated.
func ServiceAccount(namespace, name string) Subject {
	return Subject{
		User:   serviceaccount.MakeUsername(namespace, name),
		Groups: append(serviceaccount.MakeGroupNames(namespace), user.AllAuthenticated),
	}
}

// String returns "ServiceAccount NS/NAME" for a ServiceAccount subject and
// "user X" for any other.
func (s Subject) String() string {
	if ns, name, err := serviceaccount.SplitUsername(s.User); err == nil {
		return "ServiceAccount " + ns + "/" + name
	}
	return "user " + s.User
}
