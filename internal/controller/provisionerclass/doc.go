// Package provisionerclass creates the built-in ProvisionerClasses at start
// and marks every class whose controllerName this manager serves Accepted.
// Classes of other controllers are left alone, so an out-of-tree provisioner
// can claim its own class without any change to rukpak.
package provisionerclass
