package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/pkg/failure"
)

const (
	// helmConfigMediaType is the config media type of a Helm chart pushed
	// to a registry (helm push), and helmChartMediaType the media type of
	// its layer holding the chart's .tgz.
	helmConfigMediaType types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	helmChartMediaType  types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

	// maxLayers is the most layers an image may have (Docker's own limit
	// is about as many).
	maxLayers = 128
	// maxTrailing is the most bytes a layer may have after the end of its
	// archive (tar's zero-block padding); they are read to verify the
	// layer's digest.
	maxTrailing = 1 << 20
)

// extract writes the content of img into dir: its layers applied in
// order, or the chart of a Helm chart artifact, within limits.
func (s *Source) extract(ctx context.Context, c *conn, img v1.Image, dir string, limits archive.Limits) error {
	m, err := img.Manifest()
	if err != nil {
		return c.classify(err, "reading the manifest of")
	}
	layers, err := img.Layers()
	if err != nil {
		return c.classify(err, "reading the layers of")
	}
	if m.Config.MediaType == helmConfigMediaType {
		// A Helm chart in a registry is an OCI artifact, not an image: its
		// config is the chart's metadata and its one chart layer is the
		// chart's .tgz (a provenance layer may come with it). The chart is
		// unpacked from that .tgz like a gzip layer, as one archive of its
		// own, so without whiteouts; dir gets the chart's directory.
		chart, err := chartLayer(m, layers, c.subject)
		if err != nil {
			return err
		}
		if err := s.applyLayer(ctx, c, chart, true, dir, archive.Options{Limits: limits}); err != nil {
			return fmt.Errorf("chart layer of %s: %w", c.subject, err)
		}
		return nil
	}
	if len(layers) > maxLayers {
		return failure.New(v1alpha2.ReasonUnpackFailed, "%s has %d layers, more than the %d allowed", c.subject, len(layers), maxLayers)
	}
	b := budget{limits: limits, subject: c.subject}
	for i, l := range layers {
		lim, err := b.next(dir)
		if err != nil {
			return err
		}
		mt, err := l.MediaType()
		if err != nil {
			return c.classify(err, "reading the layers of")
		}
		if err := s.applyLayer(ctx, c, l, isGzip(mt), dir, archive.Options{Limits: lim, Whiteouts: true}); err != nil {
			return fmt.Errorf("layer %d of %d of %s%s: %w", i+1, len(layers), c.subject, b.left(lim, i, err), err)
		}
	}
	return nil
}

// chartLayer returns the one chart layer of a Helm chart artifact.
func chartLayer(m *v1.Manifest, layers []v1.Layer, subject string) (v1.Layer, error) {
	var chart v1.Layer
	n := 0
	for i, d := range m.Layers {
		if d.MediaType == helmChartMediaType && i < len(layers) {
			chart = layers[i]
			n++
		}
	}
	if n != 1 {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed,
			"%s is a Helm chart with %d layers of media type %s, want exactly 1", subject, n, helmChartMediaType)
	}
	return chart, nil
}

// isGzip reports whether layers of media type mt are gzip-compressed tars
// (Docker's and OCI's, distributable or not).
func isGzip(mt types.MediaType) bool {
	s := string(mt)
	return strings.HasSuffix(s, "+gzip") || strings.HasSuffix(s, ".tar.gzip")
}

// applyLayer extracts layer l into dir with the archive package: its
// compressed blob with UntarGzip when gzip is set, else its uncompressed
// content (go-containerregistry decompresses what it recognizes) with
// Untar. The blob is read to its end, so that go-containerregistry verifies
// it against its digest; a mismatch is a terminal DigestMismatch (see
// conn.classify).
func (s *Source) applyLayer(ctx context.Context, c *conn, l v1.Layer, gzip bool, dir string, opts archive.Options) error {
	open, untar := l.Uncompressed, archive.Untar
	if gzip {
		open, untar = l.Compressed, archive.UntarGzip
	}
	d, err := l.Digest()
	if err != nil {
		return c.classify(err, "reading the layers of")
	}
	c = c.about("blob " + d.String())
	rc, err := open()
	if err != nil {
		return c.classify(err, "fetching")
	}
	defer func() { _ = rc.Close() }()
	r := &recorder{r: rc}
	err = untar(ctx, r, dir, opts)
	if err == nil {
		err = drain(r)
	}
	if r.err != nil {
		// The blob could not be read: that, not what the archive package
		// made of a cut-off stream, is the cause.
		return c.classify(r.err, "reading")
	}
	return err
}

// drain reads what is left of a layer after its archive ended.
func drain(r io.Reader) error {
	n, err := io.CopyN(io.Discard, r, maxTrailing+1)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if n > maxTrailing {
		return failure.New(v1alpha2.ReasonUnpackFailed, "the layer has more than %d bytes after the end of its archive", maxTrailing)
	}
	return nil
}

// recorder is a reader that remembers the first error (other than io.EOF)
// of the reader it wraps.
type recorder struct {
	r   io.Reader
	err error
}

// Read reads from the wrapped reader.
func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}
