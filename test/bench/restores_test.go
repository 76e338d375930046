package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An edited object counts as restored only when the watch shows a version
// later than the one read before the edit, with the value it had, and not
// being deleted.
func TestRestoresSeen(t *testing.T) {
	key := client.ObjectKey{Namespace: "bench-1", Name: "b1-o2"}
	now := metav1.Now()
	cm := func(rv, index string, deleting bool) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: rv}, Data: map[string]string{"index": index}}
		if deleting {
			c.DeletionTimestamp = &now
		}
		return c
	}
	for _, tc := range []struct {
		name     string
		events   []*corev1.ConfigMap
		restored bool
	}{
		{name: "the edit itself", events: []*corev1.ConfigMap{cm("11", "tampered", false)}},
		{name: "the version read, seen late", events: []*corev1.ConfigMap{cm("10", "2", false)}},
		{name: "an older version", events: []*corev1.ConfigMap{cm("9", "2", false)}},
		{name: "being deleted", events: []*corev1.ConfigMap{cm("12", "2", true)}},
		{name: "another object", events: []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "b1-o3", ResourceVersion: "12"}, Data: map[string]string{"index": "2"}}}},
		{name: "restored after the edit", events: []*corev1.ConfigMap{cm("11", "tampered", false), cm("12", "2", false)}, restored: true},
		{name: "made again after a delete", events: []*corev1.ConfigMap{cm("15", "2", false)}, restored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &restores{waiting: map[client.ObjectKey]*restore{}}
			done, when, err := r.expect(key, "2", "10")
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range tc.events {
				r.seen(ev)
			}
			select {
			case <-done:
				if !tc.restored {
					t.Fatal("counted as restored")
				}
				if when().IsZero() {
					t.Error("restored at no time")
				}
			default:
				if tc.restored {
					t.Fatal("not counted as restored")
				}
			}
		})
	}
	if _, _, err := (&restores{waiting: map[client.ObjectKey]*restore{}}).expect(key, "2", "x"); err == nil {
		t.Error("a resource version that is not a number was taken")
	}
}
