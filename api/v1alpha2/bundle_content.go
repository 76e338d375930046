package v1alpha2

// What a Bundle's content is, whether the manager recorded it in the
// Bundle it created (spec.unpacked, a revision born complete) or the
// Bundle controller reported it (status, a Bundle created on its own, or
// a revision created before spec.unpacked existed). Readers of a Bundle's
// content (the content server, the content store's quotas, rukpakctl)
// read it through these methods, never from status alone.

// ContentDigest returns the digest of b's unpacked content:
// spec.unpacked.contentDigest for a revision born complete, else
// status.contentDigest; "" while b is not unpacked. The record in spec
// wins over status, which more users may write (bundles/status).
func (b *Bundle) ContentDigest() string {
	if u := b.Spec.Unpacked; u != nil {
		return u.ContentDigest
	}
	return b.Status.ContentDigest
}

// ContentURL returns where the content server serves b's content, "" when
// it serves it nowhere (yet).
func (b *Bundle) ContentURL() string {
	if u := b.Spec.Unpacked; u != nil {
		return u.ContentURL
	}
	return b.Status.ContentURL
}

// ObjectCount returns how many objects b's content renders to: what status
// says once it says anything (a revision whose content did not render when
// it was created reports its count there once it does), else the record.
func (b *Bundle) ObjectCount() int32 {
	if b.Status.ObjectCount > 0 || b.Spec.Unpacked == nil {
		return b.Status.ObjectCount
	}
	return b.Spec.Unpacked.ObjectCount
}

// ResolvedSources returns b's sources with every ref pinned: a revision
// born complete has pinned spec.sources; others, what status reports.
func (b *Bundle) ResolvedSources() []BundleSource {
	if b.Spec.Unpacked != nil {
		return b.Spec.Sources
	}
	return b.Status.ResolvedSources
}

// UnpackPhase returns b's phase: status.phase when reported, else Unpacked
// for a revision born complete, else "".
func (b *Bundle) UnpackPhase() BundlePhase {
	if b.Status.Phase == "" && b.Spec.Unpacked != nil {
		return BundlePhaseUnpacked
	}
	return b.Status.Phase
}
