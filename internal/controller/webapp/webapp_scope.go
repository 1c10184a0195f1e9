package webapp

import (
	"errors"
	"math/rand/v2"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/operator/notes"
)

// scope carries one reconcile's facts from the steps to computeStatus.
type scope struct {
	app *webappv1.WebApp

	// liveDeployment and liveService are the objects named after the WebApp as read from the
	// cache at the start (empty, without a UID, when absent).
	liveDeployment *appsv1.Deployment
	liveService    *corev1.Service

	// deployment and service are the WebApp's objects as this reconcile left them (nil: absent).
	deployment *appsv1.Deployment
	service    *corev1.Service

	// wroteDeployment: the Deployment was applied in this reconcile; replicasChanged and
	// templateChanged say what the apply changed on an existing Deployment.
	wroteDeployment bool
	replicasChanged bool
	templateChanged bool

	// deleting: the WebApp has a deletionTimestamp; nothing is written but its status.
	deleting bool
	// failure stops the WebApp until a human acts (bad spec, name taken, write refused).
	failure *failure
	// retrying describes a transient write failure, retried with backoff.
	retrying string
	// reconciled: every step ran.
	reconciled bool

	events notes.Notes
}

// failure describes why the WebApp is Failed and Stalled.
type failure struct {
	reason  string
	message string
}

// errStopped ends the step list without an error: the scope says why.
var errStopped = errors.New("stopped")

func (s *scope) fail(reason, message string) error {
	if s.failure == nil {
		s.failure = &failure{reason: reason, message: message}
	}
	return errStopped
}

func (s *scope) eventf(warning bool, reason, message string) {
	s.events.Add(warning, reason, message)
}

// jitter spreads d by ±10 % so WebApps created together do not resync together.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}
