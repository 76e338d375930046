// Package upgrade tests an upgrade of rukpak itself: the manager of the
// previous release (built from its commit) installs BundleDeployments of
// every built-in format, is stopped as a rollout stops it, and this
// tree's manager takes over with an empty content store. The API server's
// audit log shows that the new manager wrote nothing it installed — no
// create, apply, patch or delete of a managed object, Bundle or inventory,
// not even a dry-run — and it still corrects drift afterwards.
package upgrade
