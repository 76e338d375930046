//go:build integration

package permissions

import (
	"testing"

	"github.com/rukpak/rukpak/pkg/envtest"
)

// env is the API server (with RBAC) the tests of Checker ask.
var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }
