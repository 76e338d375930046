// Package format holds what rukpak's built-in formats (the packages under
// it) share when they read objects out of content: the key that tells two
// definitions of one object apart (ObjectKey) and the words that name a
// decoded value's JSON type in messages (Describe).
//
// The contract a format implements is not here but in package
// github.com/rukpak/rukpak/pkg/format, which formats outside this
// repository implement too.
package format
