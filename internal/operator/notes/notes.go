// Package notes collects what a reconcile has to tell and tells it once, at the end: every note
// is a log line (the reason as "operation"), and Events go out on the object. When a note marks a
// phase change, that Event alone is recorded (its message says why) and the reconcile's other
// notes are only logged: one Event per transition keeps the API server's load at scale small.
package notes

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Note is one thing a reconcile did or saw.
type Note struct {
	Warning bool
	// Phase marks the note of a phase change.
	Phase   bool
	Reason  string
	Message string
}

// Notes are a reconcile's notes, in order.
type Notes []Note

// Add appends a note.
func (n *Notes) Add(warning bool, reason, message string) {
	*n = append(*n, Note{Warning: warning, Reason: reason, Message: message})
}

// PhaseChanged appends the note of a phase change from one phase to another: reason "Phase<to>",
// message "Phase <from> -> <to>: why".
func (n *Notes) PhaseChanged(warning bool, from, to, why string) {
	*n = append(*n, Note{Warning: warning, Phase: true, Reason: "Phase" + to, Message: PhaseMessage(from, to, why)})
}

// PhaseMessage is the message of a phase change.
func PhaseMessage(from, to, why string) string {
	if from == "" {
		from = "(none)"
	}
	return fmt.Sprintf("Phase %s -> %s: %s", from, to, why)
}

// Emit logs every note and records the Events on obj (rec may be nil: logs only).
func (n Notes) Emit(ctx context.Context, rec events.EventRecorder, obj runtime.Object, action string) {
	log := ctrl.LoggerFrom(ctx)
	phaseChanged := slices.ContainsFunc(n, func(e Note) bool { return e.Phase })
	for _, e := range n {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		log.Info(e.Message, "operation", e.Reason, "eventType", typ)
		if rec != nil && (e.Phase || !phaseChanged) {
			rec.Eventf(obj, nil, typ, e.Reason, action, "%s", eventNote(e.Message))
		}
	}
}

// maxEventNote is the API server's bound on an Event's note (events.k8s.io/v1).
const maxEventNote = 1024

// eventNote is message cut to what an Event may hold, at a character boundary; the log line
// keeps all of it.
func eventNote(message string) string {
	if len(message) <= maxEventNote {
		return message
	}
	cut := maxEventNote - len("…")
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "…"
}
