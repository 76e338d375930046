package inventory

// Record is what rukpak last applied of one object: the hash of the
// applied configuration and the object's resourceVersion and generation
// right after the write. With it, a restarted manager (or an upgrade that
// leaves the object as it was) can tell that an object is exactly as
// applied without writing it again: same hash, and the live object's
// generation (or, for kinds without one, its resourceVersion) unchanged.
type Record struct {
	// Hash identifies the applied configuration (see apply.Entry.Hash).
	Hash string
	// ResourceVersion is the object's resourceVersion after the write.
	ResourceVersion string
	// Generation is the object's metadata.generation after the write; 0 for
	// kinds that do not track it.
	Generation int64
	// Keep is set when the revision applied the object with
	// helm.sh/resource-policy: keep: it is left in place, not deleted,
	// when a revision drops it or its BundleDeployment is deleted.
	Keep bool
}

// valid reports whether r can be encoded and trusted: every field set (a
// generation may be 0) and none containing a separator.
func (r Record) valid() bool {
	return r.Hash != "" && r.ResourceVersion != "" && r.Generation >= 0 &&
		!containsAny(r.Hash, "|\n") && !containsAny(r.ResourceVersion, "|\n")
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}
