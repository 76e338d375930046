package config

import "testing"

func TestUserRoles(t *testing.T) {
	roles, err := UserRoles()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rukpak-uploader", "rukpak-content-reader", "rukpak-metrics-reader"}
	if len(roles) != len(want) {
		t.Fatalf("got %d roles, want %v", len(roles), want)
	}
	for i, w := range want {
		if roles[i].Name != w || len(roles[i].Rules) == 0 {
			t.Errorf("role %d = %s with %d rules, want %s with rules", i, roles[i].Name, len(roles[i].Rules), w)
		}
	}
}
