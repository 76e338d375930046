package health

import (
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// TestCacheForgetsLeastRecentlyUsed: a full Cache forgets the Checker used
// longest ago and keeps the others compiled.
func TestCacheForgetsLeastRecentlyUsed(t *testing.T) {
	cache := NewCache(2)
	specs := map[string][]v1alpha2.Probe{
		"a": {probe("", "ConfigMap", "1 == 1")},
		"b": {probe("", "ConfigMap", "2 == 2")},
		"c": {probe("", "ConfigMap", "3 == 3")},
	}
	compiled := map[string]*Checker{}
	get := func(name string) *Checker {
		t.Helper()
		ch, err := cache.Checker(specs[name])
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	compiled["a"], compiled["b"] = get("a"), get("b")
	if get("a") != compiled["a"] { // a is now the most recently used
		t.Fatal("a compiled again while cached")
	}
	compiled["c"] = get("c") // full: b goes
	if cache.Len() != 2 {
		t.Fatalf("Len() = %d, want 2", cache.Len())
	}
	for _, name := range []string{"a", "c"} {
		if get(name) != compiled[name] {
			t.Errorf("%s was forgotten", name)
		}
	}
	if get("b") == compiled["b"] {
		t.Error("b was kept past the bound")
	}
}
