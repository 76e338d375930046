package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/pkg/failure"
)

// failingReader returns data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestStreamErrors(t *testing.T) {
	archive := gz(t, tarBytes(t, []tentry{zeros("a", 64<<10), file("b", "b")}))
	errReset := errors.New("connection reset by peer")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		r         io.Reader
		gzip      bool
		terminal  string // part of the failure's message; "" for a transient error
		transient error  // the error a transient error wraps
	}{
		{name: "not gzip", gzip: true, r: strings.NewReader("hello, world"),
			terminal: "archive: reading the gzip header: the archive is corrupt"},
		{name: "empty gzip stream", gzip: true, r: strings.NewReader(""),
			terminal: "archive: the gzip stream is empty"},
		{name: "truncated gzip stream", gzip: true, r: bytes.NewReader(archive[:len(archive)/2]),
			terminal: "the archive is corrupt: unexpected EOF"},
		{name: "bad checksum", gzip: true, r: bytes.NewReader(corruptCRC(archive)),
			terminal: "archive: after the last entry: the archive is corrupt: gzip: invalid checksum"},
		{name: "not tar", r: strings.NewReader(strings.Repeat("not a tar header ", 64)),
			terminal: "archive: reading the next entry: the archive is corrupt"},
		{name: "broken connection", gzip: true, r: &failingReader{data: archive[:len(archive)/2], err: errReset},
			transient: errReset},
		{name: "broken connection in a plain stream", r: &failingReader{data: tarBytes(t, []tentry{file("a", "a")})[:700], err: errReset},
			transient: errReset},
		{name: "cancelled", ctx: cancelled, gzip: true, r: bytes.NewReader(archive),
			transient: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			untar := Untar
			if tt.gzip {
				untar = UntarGzip
			}
			err := untar(ctx, tt.r, t.TempDir(), Options{})
			f := failure.As(err)
			if tt.terminal != "" {
				if f == nil || !strings.Contains(f.Message, tt.terminal) {
					t.Fatalf("error = %v, want a failure containing %q", err, tt.terminal)
				}
				return
			}
			if f != nil || !errors.Is(err, tt.transient) {
				t.Fatalf("error = %v (failure %v), want a transient error wrapping %v", err, f != nil, tt.transient)
			}
		})
	}
}

// corruptCRC flips a bit of the CRC-32 in the gzip trailer of data.
func corruptCRC(data []byte) []byte {
	out := bytes.Clone(data)
	out[len(out)-8] ^= 1
	return out
}

func TestTrailingBytesAfterGzip(t *testing.T) {
	data := append(gz(t, tarBytes(t, []tentry{file("a", "a")})), make([]byte, 512)...)
	dir := t.TempDir()
	if err := UntarGzip(context.Background(), bytes.NewReader(data), dir, Options{}); err != nil {
		t.Fatalf("UntarGzip: %v", err)
	}
	if got := tree(t, dir); got["a"] != fileStr+"a" {
		t.Fatalf("tree = %v", got)
	}
}
