package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// maxTagDepth bounds the chain of tags pointing to tags that peel follows.
const maxTagDepth = 10

// refName returns the full name of the branch or tag ref selects, and a
// description for messages; "" for a commit.
func refName(ref v1alpha2.GitRef) (plumbing.ReferenceName, string) {
	switch {
	case ref.Branch != "":
		return plumbing.NewBranchReferenceName(ref.Branch), fmt.Sprintf("branch %q", ref.Branch)
	case ref.Tag != "":
		return plumbing.NewTagReferenceName(ref.Tag), fmt.Sprintf("tag %q", ref.Tag)
	}
	return "", ""
}

// resolve returns the commit the branch or tag ref points to now, or the
// commit of the newest tag in ref.semver and that tag. Peeling an
// annotated tag the server does not peel fetches it into a temporary
// repository under workDir.
func (r *remote) resolve(ctx context.Context, ref v1alpha2.GitRef, workDir string, maxObject int64) (plumbing.Hash, string, error) {
	if ref.Semver == "" {
		if name, _ := refName(ref); name == "" {
			return plumbing.ZeroHash, "", failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: ref sets none of commit, branch, tag and semver", r.name)
		}
	}
	ar, err := r.advertise(ctx)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	var selected string
	if ref.Semver != "" {
		if selected, err = r.selectTag(ar, ref.Semver); err != nil {
			return plumbing.ZeroHash, "", err
		}
		ref = v1alpha2.GitRef{Tag: selected}
	}
	h, err := r.commitOf(ctx, ar, ref, workDir, maxObject)
	return h, selected, err
}

// commitOf returns the commit the branch or tag ref points to in ar.
func (r *remote) commitOf(ctx context.Context, ar *packp.AdvRefs, ref v1alpha2.GitRef, workDir string, maxObject int64) (plumbing.Hash, error) {
	name, what := refName(ref)
	h, ok := ar.References[name.String()]
	if !ok {
		return plumbing.ZeroHash, failure.New(v1alpha2.ReasonSourceNotFound, "%s not found in repository %s", what, r.name)
	}
	if !name.IsTag() {
		return h, nil
	}
	if p, ok := ar.Peeled[name.String()]; ok {
		return p, nil
	}
	if len(ar.Peeled) > 0 {
		return h, nil // the server peels annotated tags: this one is lightweight
	}
	// The server does not peel tags: fetch the tag to see what it points to.
	sto, err := newDiskStorage(workDir, r.name, maxObject)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer func() { _ = sto.Remove() }()
	if err := r.fetch(ctx, sto, ar, true, h); err != nil {
		return plumbing.ZeroHash, err
	}
	if !hasObject(sto, h) {
		return plumbing.ZeroHash, fmt.Errorf("fetching %s from %s: the server did not send %s", what, r.name, h)
	}
	return peel(sto, h, what)
}

// fetchCommit fetches the commit want into sto, as little as it can: the
// tip of the branch or tag when it is want, else want itself when the
// server allows wants by hash, else the whole history of the ref and then
// of every branch and tag.
func (r *remote) fetchCommit(ctx context.Context, sto *diskStorage, ref v1alpha2.GitRef, want plumbing.Hash) error {
	ar, err := r.advertise(ctx)
	if err != nil {
		return err
	}
	name, _ := refName(ref)
	if name != "" && pointsTo(ar, name, want) {
		if err := r.fetch(ctx, sto, ar, true, ar.References[name.String()]); err != nil {
			return err
		}
		if hasCommit(sto, want) {
			return nil
		}
		// The ref moved since it was advertised: fetch want by other means.
	}
	if allowsWantByHash(ar) {
		err := r.fetch(ctx, sto, ar, true, want)
		if err == nil && hasCommit(sto, want) {
			return nil
		}
		if failure.As(err) != nil || ctx.Err() != nil {
			return err
		}
		// The server refused the hash (it may allow only tips): fetch refs.
	}
	return r.fetchHistory(ctx, sto, ar, name, want)
}

// fetchHistory fetches the full history of the ref name (if the server has
// it) and then, if want is not part of it, of every branch and tag.
func (r *remote) fetchHistory(ctx context.Context, sto *diskStorage, ar *packp.AdvRefs, name plumbing.ReferenceName, want plumbing.Hash) error {
	if h, ok := ar.References[name.String()]; ok && name != "" {
		if err := r.fetch(ctx, sto, ar, false, h); err != nil {
			return err
		}
		if hasCommit(sto, want) {
			return nil
		}
	}
	var wants []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for n, h := range ar.References {
		if (strings.HasPrefix(n, "refs/heads/") || strings.HasPrefix(n, "refs/tags/")) && !seen[h] && !hasObject(sto, h) {
			seen[h] = true
			wants = append(wants, h)
		}
	}
	slices.SortFunc(wants, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	if len(wants) > 0 {
		if err := r.fetch(ctx, sto, ar, false, wants...); err != nil {
			return err
		}
	}
	if !hasCommit(sto, want) {
		return failure.New(v1alpha2.ReasonSourceNotFound,
			"commit %s not found in repository %s: no branch or tag contains it", want, r.name)
	}
	return nil
}

// pointsTo reports whether the ref name of ar may point to the commit want.
func pointsTo(ar *packp.AdvRefs, name plumbing.ReferenceName, want plumbing.Hash) bool {
	h, ok := ar.References[name.String()]
	switch {
	case !ok:
		return false
	case h == want:
		return true
	}
	if p, ok := ar.Peeled[name.String()]; ok {
		return p == want
	}
	// An annotated tag the server does not peel may point to want.
	return name.IsTag() && len(ar.Peeled) == 0
}

// allowsWantByHash reports whether the server accepts a want of a commit
// that is not the tip of a ref it advertises.
func allowsWantByHash(ar *packp.AdvRefs) bool {
	c := ar.Capabilities
	return c.Supports(capability.AllowReachableSHA1InWant) || c.Supports(capability.AllowTipSHA1InWant)
}

// hasCommit reports whether sto holds the commit h.
func hasCommit(sto storer.EncodedObjectStorer, h plumbing.Hash) bool {
	_, err := sto.EncodedObject(plumbing.CommitObject, h)
	return err == nil
}

// peel follows the tag h (what names it in messages) to the commit it
// points to; h may be a commit already.
func peel(sto storer.EncodedObjectStorer, h plumbing.Hash, what string) (plumbing.Hash, error) {
	for range maxTagDepth {
		obj, err := sto.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading %s: object %s: %w", what, h, err)
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			tag, err := object.DecodeTag(sto, obj)
			if err != nil {
				return plumbing.ZeroHash, failure.New(v1alpha2.ReasonUnpackFailed, "%s: decoding tag %s: %v", what, h, err)
			}
			h = tag.Target
		default:
			return plumbing.ZeroHash, failure.New(v1alpha2.ReasonUnpackFailed, "%s points to a %s, not a commit", what, obj.Type())
		}
	}
	return plumbing.ZeroHash, failure.New(v1alpha2.ReasonUnpackFailed, "%s: more than %d tags point to tags", what, maxTagDepth)
}

// verifiedCommit returns the commit want of sto after hashing its content
// again: what is unpacked is what the pin names.
func verifiedCommit(sto storer.EncodedObjectStorer, want plumbing.Hash) (*object.Commit, error) {
	obj, err := sto.EncodedObject(plumbing.CommitObject, want)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, failure.New(v1alpha2.ReasonSourceNotFound, "commit %s not found", want)
	}
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", want, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", want, err)
	}
	content, err := io.ReadAll(rd)
	_ = rd.Close()
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", want, err)
	}
	if got := plumbing.ComputeHash(plumbing.CommitObject, content); got != want {
		return nil, failure.New(v1alpha2.ReasonDigestMismatch, "the commit fetched as %s hashes to %s", want, got)
	}
	c, err := object.DecodeCommit(sto, obj)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "decoding commit %s: %v", want, err)
	}
	return c, nil
}
