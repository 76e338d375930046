// Package configmaps reads bundle content from immutable ConfigMaps in the
// system namespace (rukpak-system): every key of a ConfigMap becomes a file
// named after the key, in the directory the source names.
//
// The source is a pipeline of two steps:
//
//  1. Resolve reads each ConfigMap, refuses missing and mutable ones and pins
//     its content digest (see Digest), checking it against a digest the user
//     may have set.
//  2. Unpack reads each ConfigMap again, refuses it if its content no longer
//     matches the pinned digest (it was deleted and recreated with other
//     data) and writes its keys as files.
package configmaps
