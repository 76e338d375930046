// Package ha runs two rukpak manager replicas with leader election against
// a real API server, kills the leader (SIGKILL) in the middle of an upgrade
// of 100 BundleDeployments, and checks that the other takes over in time
// and finishes the upgrade exactly once, leaving nothing behind; and that
// both replicas' content servers answer.
package ha
