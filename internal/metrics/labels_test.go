package metrics

import (
	"fmt"
	"testing"
)

// Label values a tenant chooses are bounded: past maxLabelValues distinct
// values, every new one is Other, and values seen before keep their own.
func TestLabelsAreBounded(t *testing.T) {
	var l labelSet
	for i := range maxLabelValues {
		if v := fmt.Sprint("class-", i); l.value(v) != v {
			t.Fatalf("value %d of %d was not kept", i, maxLabelValues)
		}
	}
	for i := range 1000 {
		if got := l.value(fmt.Sprint("tenant-chosen-", i)); got != Other {
			t.Fatalf("value past the bound reported as %q, want %q", got, Other)
		}
	}
	if got := l.value("class-3"); got != "class-3" {
		t.Fatalf("a value seen before the bound: %q", got)
	}
	if len(l.seen) != maxLabelValues {
		t.Fatalf("%d values kept, want %d", len(l.seen), maxLabelValues)
	}
}
