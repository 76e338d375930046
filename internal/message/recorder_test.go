//go:build integration

package message_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// env is the API server events are recorded to.
var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// TestRecorderCutsLongNotes records an event with a note of 5,000
// characters through a real broadcaster to a real API server: it arrives
// cut, with the full note in the log. The same note written as is is
// refused by the API server, which is why events were lost.
func TestRecorderCutsLongNotes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "message")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "regarding", Namespace: ns}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(env.Config)
	long := strings.Repeat("a collision with ConfigMap x; ", 5000/30) + strings.Repeat("z", 5000%30)

	refused := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "direct-", Namespace: ns},
		EventTime:  metav1.NowMicro(), ReportingController: "rukpak.io/test", ReportingInstance: "test",
		Action: "Install", Reason: "Collision", Type: corev1.EventTypeWarning, Note: long,
		Regarding: corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: cm.Name},
	}
	if _, err := kube.EventsV1().Events(ns).Create(ctx, refused, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("creating an event with a note of %d bytes: %v, want the API server to refuse it", len(long), err)
	}

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer broadcaster.Shutdown()
	var logged []string
	log := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	rec := message.NewRecorder(broadcaster.NewRecorder(envtest.Scheme(), "rukpak.io/test"), log)
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "Collision", "Install", "%s", long)

	var note string
	envtest.Eventually(t, 30*time.Second, func() error {
		list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == "Collision" {
				note = e.Note
				return nil
			}
		}
		return apierrors.NewNotFound(eventsv1.Resource("events"), "Collision")
	})
	kept, _, _ := strings.Cut(note, "… (")
	if len(note) > message.EventNoteLimit || kept == "" || !strings.HasPrefix(long, kept) ||
		!strings.HasSuffix(note, fmt.Sprintf("… (%d more characters)", len(long)-len(kept))) {
		t.Errorf("note of %d bytes: %q, want the first part of the message and how much was left out", len(note), note)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], long) {
		t.Errorf("log = %q, want the full note once", logged)
	}
}
