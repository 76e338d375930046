package apply

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

func TestCollectWarnings(t *testing.T) {
	ctx, warnings := CollectWarnings(context.Background())
	h := WarningHandler{}
	h.HandleWarningHeaderWithContext(ctx, 299, "-", "a is deprecated")
	h.HandleWarningHeaderWithContext(ctx, 299, "-", "a is deprecated") // duplicate
	h.HandleWarningHeaderWithContext(ctx, 199, "-", "not a warning code")
	h.HandleWarningHeaderWithContext(ctx, 299, "-", "")
	h.HandleWarningHeaderWithContext(ctx, 299, "-", "b")
	h.HandleWarningHeaderWithContext(context.Background(), 299, "-", "no collector: logged")
	if got, want := warnings(), []string{"a is deprecated", "b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings = %q, want %q", got, want)
	}
	for i := 0; i < 2*maxWarnings; i++ {
		h.HandleWarningHeaderWithContext(ctx, 299, "-", fmt.Sprint(i))
	}
	if n := len(warnings()); n != maxWarnings {
		t.Fatalf("%d warnings kept, want at most %d", n, maxWarnings)
	}
}
