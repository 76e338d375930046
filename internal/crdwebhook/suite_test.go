//go:build integration

package crdwebhook

import (
	"testing"

	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

// TestMain starts one real API server for the package's tests.
func TestMain(m *testing.M) { envtest.Run(m, &env) }
