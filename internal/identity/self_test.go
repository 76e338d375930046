//go:build integration

package identity

import (
	"context"
	"slices"
	"testing"
)

func TestCurrentUser(t *testing.T) {
	user, err := CurrentUser(context.Background(), env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if user.Username == "" || user.Username == "system:serviceaccount:rukpak-system:rukpak" {
		t.Errorf("CurrentUser = %q", user.Username)
	}
	if !slices.Contains(user.Groups, "system:authenticated") {
		t.Errorf("CurrentUser's groups = %v, want system:authenticated among them", user.Groups)
	}
}
