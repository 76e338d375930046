package v1alpha2

// Reasons of the events that follow the version a BundleDeployment's
// sources select (status.installedVersion, status.newestVersion). Each is
// recorded once per version (and cause, for UpgradeHeld), when the status
// that says so is written.
const (
	// ReasonUpgradeAvailable: a resolve of the sources selected a newest
	// version other than the one installed (a Normal event).
	ReasonUpgradeAvailable = "UpgradeAvailable"
	// ReasonUpgradeApplied: the newest revision was installed and the
	// installed version changed; the message names the version before
	// and the version now (a Normal event).
	ReasonUpgradeApplied = "UpgradeApplied"
	// ReasonUpgradeHeld: the newest version is not being installed: it
	// waits for an approval (spec.upgrade.approval; a Normal event), or
	// its revision failed and is not retried until the spec or the
	// core.rukpak.io/retry annotation changes (a Warning event).
	ReasonUpgradeHeld = "UpgradeHeld"
)
