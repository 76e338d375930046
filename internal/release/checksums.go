package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WriteChecksums writes ChecksumsFile in dir: one line "HEX  NAME" per file
// of names (in dir), sorted by name, as `sha256sum -c` reads it.
func WriteChecksums(dir string, names []string) error {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	var b strings.Builder
	for _, name := range sorted {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	if err := os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", ChecksumsFile, err)
	}
	return nil
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum of %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum of %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
