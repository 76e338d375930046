package image

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/limits"
	"github.com/rukpak/rukpak/pkg/failure"
)

// budget spreads the byte and file limits over the layers of an image, so
// that they bound the unpacked image and not each layer: a layer may use
// what the layers before it left (files they deleted with whiteouts count
// no more). Unset limits take the archive package's defaults. The per-file
// and ratio limits apply to each layer as they are.
type budget struct {
	limits  archive.Limits
	subject string // the image, for messages
}

// next returns the limits for the next layer, given what dir holds now. An
// exhausted budget is a terminal failure.
func (b budget) next(dir string) (archive.Limits, error) {
	lim, d := b.limits, archive.DefaultLimits()
	lim.MaxBytes = limits.PositiveOr(lim.MaxBytes, d.MaxBytes)
	lim.MaxFiles = limits.PositiveOr(lim.MaxFiles, d.MaxFiles)
	maxBytes, maxFiles := lim.MaxBytes, lim.MaxFiles
	bytes, entries, err := usage(dir)
	if err != nil {
		return lim, err
	}
	if lim.MaxBytes -= bytes; lim.MaxBytes <= 0 {
		return lim, failure.New(v1alpha2.ReasonUnpackFailed,
			"%s: its layers write more than the limit of %d bytes", b.subject, maxBytes)
	}
	if lim.MaxFiles -= entries; lim.MaxFiles <= 0 {
		return lim, failure.New(v1alpha2.ReasonUnpackFailed,
			"%s: its layers write more than the limit of %d entries", b.subject, maxFiles)
	}
	return lim, nil
}

// usage returns the bytes of the regular files under dir and the number of
// entries (of any type) under it, as the archive package counts them.
func usage(dir string) (bytes int64, entries int, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		entries++
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			bytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measuring unpacked layers: %w", err)
	}
	return bytes, entries, nil
}

// left describes lim, the limits layer i (from 0) was given, for its
// error err when the archive package refused the layer: it reports the
// limits it was given, which for every layer but the first are what the
// image had left.
func (b budget) left(lim archive.Limits, i int, err error) string {
	if i == 0 || failure.Reason(err, "") != v1alpha2.ReasonUnpackFailed {
		return ""
	}
	return fmt.Sprintf(" (with %d bytes and %d entries left of the image's limits)", lim.MaxBytes, lim.MaxFiles)
}
