package crdwebhook

import (
	"testing"

	"github.com/rukpak/rukpak/internal/testutil/envtest"
)

var env *envtest.Env

// TestMain starts one real API server for the package's tests.
func TestMain(m *testing.M) { envtest.Run(m, &env) }
