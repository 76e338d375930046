package envtest

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	name := fmt.Sprintf("%s-%06d", prefix, rand.IntN(1000000))
	if err := e.Client.Create(context.Background(), corev1Namespace{}.object(name)); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// UniqueName returns prefix plus a random suffix, for cluster-scoped test
// objects.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%06d", prefix, rand.IntN(1000000))
}
