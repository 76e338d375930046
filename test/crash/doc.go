// Package crash kills the rukpak manager (SIGKILL) at random points of
// upgrades and checks that every run converges: exactly one healthy
// revision installed, its objects and no others.
package crash
