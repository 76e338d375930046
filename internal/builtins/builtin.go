// Package builtins holds the provisioners rukpak ships — plain manifests
// (and kustomizations), OLM registry+v1 bundles and Helm charts, each
// rendering in a sandboxed child process — and how a revision's format
// configuration is put together for any provisioner.
package builtins

import (
	"sync"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/sandboxed"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/format"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// Builtin returns the provisioners rukpak ships, by controllerName: plain
// manifests (and kustomizations), OLM registry+v1 bundles and Helm charts,
// rendering in sandboxed children with the default limits (see package
// sandboxed). Only if the running executable cannot be found do they
// render in this process.
func Builtin() provisioner.Set {
	return BuiltinWith(defaultRunner())
}

// BuiltinWith returns the provisioners rukpak ships, rendering in children
// of runner; a nil runner renders in this process.
func BuiltinWith(runner *sandbox.Runner) provisioner.Set {
	return provisioner.Set{
		v1alpha2.ControllerPlain: {ControllerName: v1alpha2.ControllerPlain, Format: must(sandboxed.New(sandboxed.Plain, runner))},
		v1alpha2.ControllerRegistry: {
			ControllerName: v1alpha2.ControllerRegistry,
			Format:         must(sandboxed.New(sandboxed.RegistryV1, runner)),
			Takes:          provisioner.ConfigFields{WatchNamespaces: true},
		},
		v1alpha2.ControllerHelm: {
			ControllerName: v1alpha2.ControllerHelm,
			Format:         must(sandboxed.New(sandboxed.Helm, runner)),
			Takes:          provisioner.ConfigFields{Values: true},
			Capabilities:   true,
			RenderOnce:     true,
		},
	}
}

// must returns f; the names of the built-in formats are constants.
func must(f *sandboxed.Format, err error) format.Format {
	if err != nil {
		panic(err)
	}
	return f
}

var (
	defaultOnce sync.Once
	defaultRun  *sandbox.Runner
)

// defaultRunner is the Runner of Builtin, with the default limits, shared
// so that its concurrency limit holds across the sets Builtin returns.
func defaultRunner() *sandbox.Runner {
	defaultOnce.Do(func() {
		if r, err := sandbox.New(sandbox.Limits{}); err == nil {
			defaultRun = r
		}
	})
	return defaultRun
}
