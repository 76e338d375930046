package release

import (
	"io"
	"log"
)

// nopLogger silences the registry's request log.
func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }
