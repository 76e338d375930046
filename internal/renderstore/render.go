package renderstore

import (
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Render is what one render of a revision produced, and what every later
// apply of that revision uses.
type Render struct {
	// Revision is the name of the Bundle rendered. Save takes it from the
	// Bundle (a Render naming another Bundle is refused).
	Revision string
	// BundleUID is the UID of the Bundle the render was saved for; Save
	// takes it from the Bundle. A Bundle deleted and created again under the
	// same name is another revision: compare it with the Bundle applied (the
	// garbage collector removes the old Bundle's render, but not at once).
	BundleUID types.UID
	// ContentDigest is the digest of the content rendered (the Bundle's
	// status.contentDigest).
	ContentDigest string
	// FormatVersion names the renderer and its version (for example
	// "helm/v1"). It is kept as given, for the caller to tell a render of
	// an older renderer.
	FormatVersion string
	// Objects are the rendered objects, in apply order. None may be nil.
	Objects []*unstructured.Unstructured
	// Answers are the lookup answers the render used, by key, each a JSON
	// text kept byte for byte; nil when there are none.
	Answers map[string]json.RawMessage
	// ReleaseRevision is the release revision the templates saw
	// (.Release.Revision in Helm).
	ReleaseRevision int
	// Upgrade is whether the templates saw an upgrade (.Release.IsUpgrade).
	Upgrade bool
}

// clone returns a deep copy of r: what Load returns may be changed by its
// caller without changing the cached render.
func (r *Render) clone() *Render {
	out := *r
	out.Objects = make([]*unstructured.Unstructured, len(r.Objects))
	for i, obj := range r.Objects {
		out.Objects[i] = obj.DeepCopy()
	}
	if r.Answers != nil {
		out.Answers = maps.Clone(r.Answers)
		for k, v := range out.Answers {
			out.Answers[k] = slices.Clone(v)
		}
	}
	return &out
}

// SecretType is the type of every chunk Secret.
const SecretType corev1.SecretType = "core.rukpak.io/render.v1"

// LabelRenderOf marks a chunk Secret; its value is the Bundle's name
// (shortened with a hash past 63 characters: see labelValue). The
// manager's informer cache must exclude Secrets with this label: renders
// are read only through the Store, and may be large.
const LabelRenderOf = "core.rukpak.io/render-of"

// Annotations of every chunk Secret.
const (
	annotationBundle      = "core.rukpak.io/render-bundle"
	annotationBundleUID   = "core.rukpak.io/render-bundle-uid"
	annotationChunk       = "core.rukpak.io/render-chunk"
	annotationChunks      = "core.rukpak.io/render-chunks"
	annotationChunkSHA256 = "core.rukpak.io/render-chunk-sha256"
	annotationSHA256      = "core.rukpak.io/render-sha256"
	// dataKey holds a chunk's bytes.
	dataKey = "payload"
)

// Sizes and limits.
const (
	// ChunkSize is the most payload bytes one Secret holds: well under the
	// 1 MiB limit of a Secret's data.
	ChunkSize = 900 << 10
	// DefaultMaxSize is the most bytes a render may decompress to (its
	// JSON): above the 128 MiB of output a Helm chart may render.
	DefaultMaxSize int64 = 256 << 20
	// DefaultMaxChunks is the most chunks a render may have: enough for a
	// render of DefaultMaxSize that does not compress at all (gzip adds
	// at most a few bytes per 16 KiB block).
	DefaultMaxChunks = 300
	// maxChunksCap bounds Options.MaxChunks, so that a chunk's index
	// takes at most five digits of its name.
	maxChunksCap = 100_000
)

// Reasons of the Warning events a caller emits when a revision cannot use
// its stored render (see Reason).
const (
	// EventRenderLost: the revision has no stored render (it was deleted,
	// or the revision was rendered before renders were stored); it was
	// rendered again, so generated values (certificates, passwords) may
	// have changed.
	EventRenderLost = "RenderLost"
	// EventRenderCorrupt: the stored render was incomplete, changed or
	// unreadable; the revision was rendered again and the new render
	// replaced it.
	EventRenderCorrupt = "RenderCorrupt"
	// EventRenderNotSaved: the render could not be stored (ErrTooLarge,
	// or an API error); it was applied, and the next apply of the revision
	// renders again.
	EventRenderNotSaved = "RenderNotSaved"
)
