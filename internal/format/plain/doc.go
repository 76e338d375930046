// Package plain implements the plain+v0 bundle format: a bundle is a tree
// with a manifests/ directory whose .yaml, .yml and .json files hold the
// objects to install, as they are, or a kustomization at its root.
//
// Objects reads a bundle in this order:
//
//  1. Look for a kustomization file at the root (kustomization.yaml,
//     kustomization.yml or Kustomization). If there is one, build it with
//     package kustomize (in memory, no network, builtin plugins only),
//     ignore manifests/, and go to step 6 with the built objects in
//     kustomize's output order.
//  2. Check that manifests/ exists and is a directory.
//  3. Walk it recursively in lexical path order (the order of fs.WalkDir,
//     so 01_namespace.yaml comes before 02_deployment.yaml), reading every
//     .yaml, .yml and .json file and ignoring every other file.
//  4. Split each file into documents: YAML files at "---" lines (empty and
//     comment-only documents are skipped), JSON files into their top-level
//     values.
//  5. Expand Lists (kind List, or a kind ending in "List" that has items)
//     into their items.
//  6. Check each object: it has apiVersion, kind and metadata.name, and no
//     other object of the bundle has the same group, kind, namespace and
//     name.
//
// Objects are returned in file order, then document order (or kustomize's
// order), unchanged: the apply engine places namespaced objects without a
// namespace in the install namespace. Content that is the bundle's fault is
// a terminal failure.Error whose message names the file and document (or
// the kustomization file and entry): reason InvalidContent, or for a
// kustomization RenderFailed when kustomize fails and UnsupportedFeature
// for Helm charts and non-builtin plugins. Because bundles are untrusted,
// Limits bound the size of each file, the size of all manifest files (all
// files of a kustomize bundle) together, the number of objects and the
// number of files of a kustomize bundle.
package plain
