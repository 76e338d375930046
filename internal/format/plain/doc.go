// Package plain implements the plain+v0 bundle format: a bundle is a tree
// with a manifests/ directory whose .yaml, .yml and .json files hold the
// objects to install, as they are.
//
// Objects reads a bundle in this order:
//
//  1. Check that manifests/ exists and is a directory.
//  2. Walk it recursively in lexical path order (the order of fs.WalkDir,
//     so 01_namespace.yaml comes before 02_deployment.yaml), reading every
//     .yaml, .yml and .json file and ignoring every other file.
//  3. Split each file into documents: YAML files at "---" lines (empty and
//     comment-only documents are skipped), JSON files into their top-level
//     values.
//  4. Expand Lists (kind List, or a kind ending in "List" that has items)
//     into their items.
//  5. Check each object: it has apiVersion, kind and metadata.name, and no
//     other object of the bundle has the same group, kind, namespace and
//     name.
//
// Objects are returned in file order, then document order, unchanged: the
// apply engine places namespaced objects without a namespace in the install
// namespace. Content that is the bundle's fault is a terminal
// failure.Error with reason InvalidContent whose message names the file and
// document. Because bundles are untrusted, Limits bound the size of each
// file, the size of all manifest files together and the number of objects.
package plain
