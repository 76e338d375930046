package message

import (
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Recorder records events through another recorder with their notes cut
// to EventNoteLimit; the full note of a cut event goes to Log.
type Recorder struct {
	// Recorder records the events.
	Recorder events.EventRecorder
	// Log receives the full note of each event that was cut.
	Log logr.Logger
}

var (
	_ events.EventRecorder          = (*Recorder)(nil)
	_ events.AnnotatedEventRecorder = (*Recorder)(nil)
)

// NewRecorder returns r with its notes cut, logging what it cuts to log.
func NewRecorder(r events.EventRecorder, log logr.Logger) *Recorder {
	return &Recorder{Recorder: r, Log: log}
}

// Eventf records an event about regarding whose note fits.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.Recorder.Eventf(regarding, related, eventtype, reason, action, "%s", r.fit(regarding, reason, note, args))
}

// AnnotatedEventf records an annotated event about regarding whose note
// fits; without annotation support underneath, a plain one.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string,
	eventtype, reason, action, note string, args ...any) {
	text := r.fit(regarding, reason, note, args)
	if a, ok := r.Recorder.(events.AnnotatedEventRecorder); ok {
		a.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, "%s", text)
		return
	}
	r.Recorder.Eventf(regarding, related, eventtype, reason, action, "%s", text)
}

// fit formats the note and cuts it to EventNoteLimit, logging the full
// text if it was cut.
func (r *Recorder) fit(regarding runtime.Object, reason, note string, args []any) string {
	text := fmt.Sprintf(note, args...)
	cut, ok := Cut(text, EventNoteLimit)
	if ok {
		kv := []any{"reason", reason, "note", text}
		if m, err := meta.Accessor(regarding); err == nil {
			kv = append(kv, "namespace", m.GetNamespace(), "name", m.GetName())
		}
		if regarding != nil {
			kv = append(kv, "kind", regarding.GetObjectKind().GroupVersionKind().Kind)
		}
		r.Log.Info("event note cut to the API server's limit; the full note follows", kv...)
	}
	return cut
}
