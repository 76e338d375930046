// Package admission installs rukpak's admission policies (config/policy)
// into a cluster and waits until the API server enforces them; the local
// cluster and the test environment use it. What the policies check, and
// the manager's re-check of the same rights, are in internal/approval.
package admission
