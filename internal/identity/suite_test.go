//go:build integration

package identity

import (
	"testing"

	"github.com/rukpak/rukpak/pkg/envtest"
)

// env is the API server (with RBAC) the Pool's clients talk to; its Config
// is an admin, allowed to impersonate.
var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }
