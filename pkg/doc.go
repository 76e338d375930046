// Package pkg is rukpak's public Go API, for provisioners built outside
// this repository (see docs/provisioners.md and provisioners/appspec).
// It holds no code; its packages are of two layers.
//
// Contracts are what a provisioner and the engine agree on. They import
// nothing of rukpak's internal/ (only api/ and each other), so they can be
// read, implemented and tested without the engine:
//
//   - failure: the error with a condition reason, and the retry policy of
//     each reason
//   - format: the Format a provisioner implements, and the Config it is
//     given
//   - provisioner: a ProvisionerClass controllerName with its format, and
//     the Set of them one manager runs
//
// Assemblies put the engine together for a provisioner to run and test.
// They may import internal/, where the engine lives; nothing of
// internal/, api/, config/ or the contracts imports them, but tests:
//
//   - manager: the whole engine for a set of provisioners, with the
//     options and flags rukpak's own manager is built from too
//   - envtest: a real etcd and kube-apiserver with rukpak's CRDs and
//     admission policies, for tests
//
// No exported name of either layer is, or exposes, a type of internal/:
// an assembly declares the types of its API itself, so that go doc shows
// all of it and a change of internal/ is not a change of the API.
//
// A package added under pkg/ is a contract unless layers_test.go lists it
// as an assembly; that test enforces these rules, and api_test.go that
// every exported name and field is documented.
package pkg
