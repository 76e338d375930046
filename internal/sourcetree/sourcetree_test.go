package sourcetree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoot: Root holds rukpak's go.mod.
func TestRoot(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(Root(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "module github.com/rukpak/rukpak\n") {
		t.Fatalf("%s/go.mod is not rukpak's", Root())
	}
}
