package inventory

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// maxReleased bounds how many objects one release record lists, so that
// it stays one ConfigMap far below the 1 MiB object limit (an entry is
// about 40 bytes compressed: its UIDs do not compress).
const maxReleased = 10000

// Released is one object a BundleDeployment left in place, still
// labelled as its own, for another one to take over.
type Released struct {
	// ID names the object (with the version it was applied with).
	ID ID
	// UID is the object's metadata.uid when it was left in place: the
	// release is of that object only, not of one created again under
	// its name.
	UID types.UID
	// TakenBy is the BundleDeployment taking the object over; zero while
	// none does. Only it may take the object until it lets go.
	TakenBy Owner
}

// encodeReleased writes entries one per line as
// group|version|kind|namespace|name|uid|taker name|taker uid, gzipped.
func encodeReleased(entries []Released) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, e := range entries {
		id := e.ID
		if _, err := fmt.Fprintf(zw, "%s|%s|%s|%s|%s|%s|%s|%s\n", id.Group, id.Version, id.Kind, id.Namespace, id.Name, e.UID, e.TakenBy.Name, e.TakenBy.UID); err != nil {
			return nil, fmt.Errorf("encoding release record: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing release record: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeReleased reverses encodeReleased.
func decodeReleased(data []byte) ([]Released, error) {
	if len(data) == 0 {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompressing release record: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing release record: %w", err)
	}
	if len(raw) > maxDecoded {
		return nil, fmt.Errorf("release record decompresses to more than %d bytes", maxDecoded)
	}
	var out []Released
	for i, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 8 || f[2] == "" || f[4] == "" || f[5] == "" || (f[6] == "") != (f[7] == "") {
			return nil, fmt.Errorf("release record line %d is malformed: %q", i+1, line)
		}
		out = append(out, Released{
			ID:      ID{Group: f[0], Version: f[1], Kind: f[2], Namespace: f[3], Name: f[4]},
			UID:     types.UID(f[5]),
			TakenBy: Owner{Name: f[6], UID: types.UID(f[7])},
		})
	}
	return out, nil
}
