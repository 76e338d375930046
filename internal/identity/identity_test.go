package identity

import "testing"

func TestIdentity(t *testing.T) {
	tests := []struct {
		name      string
		id        Identity
		isManager bool
		userName  string
		str       string
	}{
		{name: "manager (zero value)", id: Identity{}, isManager: true, userName: "", str: "the manager"},
		{name: "Manager", id: Manager, isManager: true, userName: "", str: "the manager"},
		{name: "ServiceAccount", id: ServiceAccount("team-a", "installer"), isManager: false,
			userName: "system:serviceaccount:team-a:installer", str: "ServiceAccount team-a/installer"},
		{name: "ServiceAccount with dots and dashes", id: ServiceAccount("kube-system", "my.sa-1"), isManager: false,
			userName: "system:serviceaccount:kube-system:my.sa-1", str: "ServiceAccount kube-system/my.sa-1"},
		{name: "literal struct", id: Identity{Namespace: "ns", Name: "sa"}, isManager: false,
			userName: "system:serviceaccount:ns:sa", str: "ServiceAccount ns/sa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.IsManager(); got != tt.isManager {
				t.Errorf("IsManager() = %v, want %v", got, tt.isManager)
			}
			if got := tt.id.UserName(); got != tt.userName {
				t.Errorf("UserName() = %q, want %q", got, tt.userName)
			}
			if got := tt.id.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
		})
	}
}

// TestIdentityIsAMapKey: identities are compared by value, so equal
// ServiceAccounts share a pool entry and a watch.
func TestIdentityIsAMapKey(t *testing.T) {
	m := map[Identity]int{}
	m[ServiceAccount("ns", "sa")]++
	m[ServiceAccount("ns", "sa")]++
	m[ServiceAccount("ns", "other")]++
	m[Manager]++
	if m[Identity{Namespace: "ns", Name: "sa"}] != 2 || len(m) != 3 {
		t.Errorf("map = %v", m)
	}
}
