package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// The committed corpus testdata/hostile/*.tar.gz is made from the cases of
// TestHostile; regenerate it after changing them with
//
//	go test ./internal/archive -run TestHostile -update-corpus
var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/hostile/*.tar.gz from the cases of TestHostile")

// outsideAbs is where an archive with absolute names tries to write.
const outsideAbs = "/tmp/rukpak-archive-test-pwned"

type hostileCase struct {
	name     string // the corpus file is testdata/hostile/<name>.tar.gz
	entries  []tentry
	limits   Limits
	streamed bool   // too large to commit: compressed while it is read
	long     bool   // writes 100 MiB: skipped with -short (make test-unit)
	want     string // part of the refusal's message
}

func hostileCases() []hostileCase {
	many := make([]tentry, 1000)
	for i := range many {
		many[i] = file(fmt.Sprintf("d%d/f%04d", i%10, i), "")
	}
	kib := strings.Repeat("k", 1024)
	return []hostileCase{
		{name: "traversal", entries: []tentry{file("../sibling/pwned", "x")},
			want: `archive entry "../sibling/pwned": path escapes the destination`},
		{name: "traversal-nested", entries: []tentry{dirEntry("a/"), file("a/../../sibling/pwned", "x")},
			want: `archive entry "a/../../sibling/pwned": path escapes the destination`},
		{name: "absolute-path", entries: []tentry{file(outsideAbs, "x")},
			want: `archive entry "` + outsideAbs + `": path is absolute`},
		{name: "escaping-symlink", entries: []tentry{symlink("evil", "../sibling"), file("evil/pwned", "x")},
			want: `archive entry "evil": symlink target "../sibling" escapes the destination`},
		{name: "deep-escaping-symlink", entries: []tentry{dirEntry("a/b/"), symlink("a/b/evil", "../../../sibling"), file("a/b/evil/pwned", "x")},
			want: `symlink target "../../../sibling" escapes the destination`},
		{name: "absolute-symlink", entries: []tentry{symlink("evil", "/tmp"), file("evil/rukpak-archive-test-pwned", "x")},
			want: `archive entry "evil": symlink target "/tmp" is absolute`},
		{name: "symlink-chain", entries: []tentry{symlink("self", "."), symlink("up", "self/../sibling"), file("up/pwned", "x")},
			want: `archive entry "up": symlink target "self/../sibling" has ".." after a name`},
		{name: "symlink-write-through", entries: []tentry{dirEntry("sub/"), symlink("link", "sub"), file("link/pwned", "x")},
			want: `archive entry "link/pwned": parent "link" is a symbolic link; links are never followed`},
		{name: "symlink-write-through-deep", entries: []tentry{dirEntry("a/b/"), symlink("a/b/root", "../.."), file("a/b/root/a/pwned", "x")},
			want: `archive entry "a/b/root/a/pwned": parent "a/b/root" is a symbolic link`},
		{name: "hardlink-escape", entries: []tentry{hardlink("h", "../sibling/secret")},
			want: `archive entry "h": hard link target "../sibling/secret" escapes the destination`},
		{name: "hardlink-absolute", entries: []tentry{hardlink("h", "/etc/passwd")},
			want: `archive entry "h": hard link target "/etc/passwd" is absolute`},
		{name: "hardlink-through-symlink", entries: []tentry{file("sub/f", "x"), symlink("l", "sub"), hardlink("h", "l/f")},
			want: `archive entry "h": hard link target "l/f" goes through symbolic link "l"`},
		{name: "hardlink-to-directory", entries: []tentry{dirEntry("sub/"), hardlink("h", "sub")},
			want: `archive entry "h": hard link target "sub" is not a regular file of the archive`},
		{name: "hardlink-missing", entries: []tentry{hardlink("h", "nothing")},
			want: `hard link target "nothing" is not a regular file`},
		{name: "char-device", entries: []tentry{special("null", tar.TypeChar)},
			want: `archive entry "null": character devices are not allowed`},
		{name: "block-device", entries: []tentry{special("sda", tar.TypeBlock)},
			want: `archive entry "sda": block devices are not allowed`},
		{name: "fifo", entries: []tentry{special("pipe", tar.TypeFifo)},
			want: `archive entry "pipe": FIFOs are not allowed`},
		{name: "unsupported-type", entries: []tentry{special("contiguous", tar.TypeCont)},
			want: `archive entry "contiguous": entry type '7' is not supported`},
		{name: "gzip-bomb", entries: []tentry{zeros("zeros", 8<<20)},
			want: `archive entry "zeros": gzip stream expands more than 200 times`},
		{name: "many-files", entries: many, limits: Limits{MaxFiles: 100},
			want: `the archive has more than 100 entries, the limit`},
		{name: "oversized-file", entries: []tentry{file("big", kib+kib)}, limits: Limits{MaxFileBytes: 1024},
			want: `archive entry "big": file of 2048 bytes is larger than the limit of 1024 bytes per file`},
		{name: "total-size", entries: []tentry{file("a", kib), file("b", kib), file("c", kib)}, limits: Limits{MaxBytes: 2048},
			want: `archive entry "c": the files of the archive exceed the limit of 2048 bytes in all`},
		{name: "hardlink-bomb", entries: hardlinkBomb(file("big", kib), 10), limits: Limits{MaxBytes: 4096},
			want: `archive entry "l0003": hard link to "big" (1024 bytes) makes the files of the archive exceed the limit of 4096 bytes in all`},
		{name: "file-replaces-directory", entries: []tentry{file("d/f", "x"), file("d", "x")},
			want: `archive entry "d": a file cannot replace the directory`},
		{name: "directory-replaces-file", entries: []tentry{file("f", "x"), dirEntry("f/")},
			want: `archive entry "f/": a directory cannot replace the file`},
		{name: "file-as-parent", entries: []tentry{file("f", "x"), file("f/g", "x")},
			want: `archive entry "f/g": parent "f" is not a directory`},
		{name: "gzip-bomb-1gib", streamed: true, entries: []tentry{zeros("zeros", 1<<30)}, limits: Limits{MaxBytes: 2 << 30, MaxFileBytes: 2 << 30},
			want: `archive entry "zeros": gzip stream expands more than 200 times`},
		{name: "hardlink-bomb-100mib", streamed: true, long: true, entries: hardlinkBomb(zeros("big", 100<<20), 10_000), limits: Limits{MaxRatio: 1 << 20},
			want: `archive entry "l0009": hard link to "big" (104857600 bytes) makes the files of the archive exceed the limit of 1073741824 bytes in all`},
		{name: "deep-long-paths", streamed: true, entries: deepPaths(2000, 16, 240), limits: Limits{MaxPathBytes: 1 << 20},
			want: `the paths of the archive (entries and the directories they imply) exceed the limit of 1048576 bytes in all`},
		{name: "implied-directories", streamed: true, entries: deepPaths(300, 4, 8), limits: Limits{MaxFiles: 1000},
			want: `the archive has more than 1000 entries`}, // 300 files, 1200 directories
		{name: "huge-file", streamed: true, entries: []tentry{zeros("huge", 1<<30)},
			want: `archive entry "huge": file of 1073741824 bytes is larger than the limit of 536870912 bytes per file`},
	}
}

// deepPaths returns n empty files, each under its own chain of depth
// directories whose names are width bytes long: a few hundred kilobytes
// compressed, gigabytes of paths to keep track of.
func deepPaths(n, depth, width int) []tentry {
	entries := make([]tentry, n)
	for i := range entries {
		parts := make([]string, depth)
		for j := range parts {
			parts[j] = fmt.Sprintf("%0*d", width, i*depth+j)
		}
		entries[i] = file(strings.Join(parts, "/")+"/f", "")
	}
	return entries
}

// hardlinkBomb returns target followed by n hard links to it, l0000 and on.
func hardlinkBomb(target tentry, n int) []tentry {
	entries := []tentry{target}
	for i := range n {
		entries = append(entries, hardlink(fmt.Sprintf("l%04d", i), target.name))
	}
	return entries
}

func TestHostile(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long && testing.Short() {
				t.Skip("writes 100 MiB (hardlink-bomb has the same refusal at 1 KiB): make test runs it, make test-unit does not")
			}
			if tc.streamed {
				r := streamTarGz(tc.entries)
				defer func() { _ = r.Close() }()
				checkRefused(t, r, tc.limits, tc.want)
				return
			}
			data := corpusFile(t, tc)
			checkRefused(t, bytes.NewReader(data), tc.limits, tc.want)
		})
	}
}

// corpusFile returns the committed archive of tc, rewriting it first with
// -update-corpus, and checks that it holds what tc builds.
func corpusFile(t *testing.T, tc hostileCase) []byte {
	t.Helper()
	built := tarBytes(t, tc.entries)
	file := filepath.Join("testdata", "hostile", tc.name+".tar.gz")
	if *updateCorpus {
		if err := os.WriteFile(file, gz(t, built), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/archive -run TestHostile -update-corpus)", err)
	}
	if !bytes.Equal(gunzip(t, data), built) {
		t.Fatalf("%s is stale (run go test ./internal/archive -run TestHostile -update-corpus)", file)
	}
	return data
}

// checkRefused extracts the compressed archive r into a directory next to
// an empty sibling and checks that it is refused with want and that
// nothing was written outside the destination.
func checkRefused(t *testing.T, r io.Reader, limits Limits, want string) {
	t.Helper()
	parent := t.TempDir()
	dest, sibling := filepath.Join(parent, "dest"), filepath.Join(parent, "sibling")
	for _, d := range []string{dest, sibling} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := UntarGzip(context.Background(), r, dest, Options{Limits: limits})
	f := failure.As(err)
	if f == nil {
		t.Fatalf("error = %v, want a terminal failure", err)
	}
	if f.Reason != v1alpha2.ReasonUnpackFailed || !strings.Contains(f.Message, want) {
		t.Fatalf("failure = %s: %q, want %s containing %q", f.Reason, f.Message, v1alpha2.ReasonUnpackFailed, want)
	}
	checkContained(t, parent, dest, sibling)
}

// checkContained checks that parent holds only dest and an empty sibling,
// that nothing named pwned is in dest, and that outsideAbs was not written.
func checkContained(t *testing.T, parent, dest, sibling string) {
	t.Helper()
	if entries, err := os.ReadDir(sibling); err != nil || len(entries) != 0 {
		t.Fatalf("sibling directory holds %v (%v), want nothing", entries, err)
	}
	if entries, err := os.ReadDir(parent); err != nil || len(entries) != 2 {
		t.Fatalf("parent directory holds %v (%v), want dest and sibling", entries, err)
	}
	if _, err := os.Lstat(outsideAbs); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists (%v)", outsideAbs, err)
	}
	for p := range tree(t, dest) {
		if strings.Contains(p, "pwned") {
			t.Fatalf("%s was written", p)
		}
	}
}
