package envtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type corev1Namespace struct{}

func (corev1Namespace) object(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// Namespace creates a namespace with a unique name starting with prefix for
// one test. envtest has no namespace controller, so it is not deleted.
func (e *Env) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	name := UniqueName(prefix)
	if err := e.Client.Create(context.Background(), corev1Namespace{}.object(name)); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// UniqueName returns prefix plus a six-digit suffix, for test objects.
// The suffixes of one process never repeat for a million names: the n-th
// is a random start plus n steps of uniqueStep, which shares no factor
// with a million. (Random suffixes repeated, one in about fifty runs of a
// package that names a few hundred objects: "already exists".) One name
// does not share a leading part with the next, as counting by one would
// (helpers that cut a name short must not make two alike), and processes
// that share an API server start at random points.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%06d", prefix, (uniqueStart+uniqueNext.Add(1)*uniqueStep)%1000000)
}

// uniqueStep is the stride of UniqueName's suffixes: a prime, so every
// suffix comes once in a million names.
const uniqueStep = 7919

var (
	// uniqueStart is where this process's suffixes start.
	uniqueStart = uint64(rand.IntN(1000000))
	// uniqueNext counts the names handed out.
	uniqueNext atomic.Uint64
)
