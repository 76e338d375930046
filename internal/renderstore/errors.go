package renderstore

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned by Load when no render of the revision is
	// stored.
	ErrNotFound = errors.New("no render is stored")
	// ErrCorrupt matches every *CorruptError (errors.Is).
	ErrCorrupt = errors.New("the stored render is corrupt")
	// ErrExists is returned by Save when another, intact render of the
	// same Bundle is stored: the first render of a revision stands (Delete
	// it first to replace it).
	ErrExists = errors.New("another render of the revision is stored")
	// ErrTooLarge is returned by Save for a render over Options.MaxSize or
	// Options.MaxChunks.
	ErrTooLarge = errors.New("the render is too large to store")
)

// Problem says what is wrong with a stored render.
type Problem string

// The problems of a CorruptError.
const (
	// ProblemMissing: a chunk is missing (a partial write or a deletion).
	ProblemMissing Problem = "Missing"
	// ProblemMismatch: a checksum does not match (a chunk was changed), or
	// the chunks are of different saves or of another Bundle.
	ProblemMismatch Problem = "Mismatch"
	// ProblemInvalid: a chunk's type, annotations or data key are not
	// those Save writes.
	ProblemInvalid Problem = "Invalid"
	// ProblemUndecodable: the payload does not decompress or decode.
	ProblemUndecodable Problem = "Undecodable"
	// ProblemTooLarge: the payload is over Options.MaxSize, or has more
	// than Options.MaxChunks chunks.
	ProblemTooLarge Problem = "TooLarge"
	// ProblemUnsupported: the payload is of an encoding version this
	// build does not read.
	ProblemUnsupported Problem = "Unsupported"
)

// CorruptError is a stored render that cannot be used. errors.Is(err,
// ErrCorrupt) matches it.
type CorruptError struct {
	// Revision is the Bundle's name.
	Revision string
	// Chunk is the index of the chunk at fault, or -1 when the fault is
	// the whole payload's.
	Chunk int
	// Problem is what is wrong.
	Problem Problem
	// Detail says it for people.
	Detail string
}

// Error says which render, which chunk and what is wrong.
func (e *CorruptError) Error() string {
	where := ""
	if e.Chunk >= 0 {
		where = fmt.Sprintf(" chunk %d:", e.Chunk)
	}
	return fmt.Sprintf("stored render of bundle %s is corrupt (%s):%s %s", e.Revision, e.Problem, where, e.Detail)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// corrupt returns a *CorruptError.
func corrupt(revision string, chunk int, p Problem, format string, args ...any) *CorruptError {
	return &CorruptError{Revision: revision, Chunk: chunk, Problem: p, Detail: fmt.Sprintf(format, args...)}
}

// Reason returns the reason of the Warning event for an error of Load:
// EventRenderLost for ErrNotFound, EventRenderCorrupt for a *CorruptError,
// and "" for any other error (an API error: retry rather than render
// again).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return EventRenderLost
	case errors.Is(err, ErrCorrupt):
		return EventRenderCorrupt
	}
	return ""
}
