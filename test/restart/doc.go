// Package restart tests that rukpak writes only what changed: a manager
// started again over installed BundleDeployments writes nothing, and an
// upgrade writes only the objects it changes. Against a real API server,
// with the whole manager run in-process and its requests logged.
package restart
