//go:build integration

package crdwebhook

import (
	"context"
	"testing"
)

func TestCurrentUser(t *testing.T) {
	user, err := CurrentUser(context.Background(), env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if user == "" || user == "system:serviceaccount:rukpak-system:rukpak" {
		t.Errorf("CurrentUser = %q", user)
	}
}
