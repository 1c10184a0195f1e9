package operator

import (
	"flag"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Event limits: the events/v1 recorder sends every Event from its own goroutine, retrying for up
// to two minutes, so a burst of Events against a busy API server would pile up goroutines without
// bound. Like the kubelet's --event-qps, the operator records at most EventQPS Events a second
// (EventBurst at once) and drops the rest: every Event is also a log line.
const (
	DefaultEventQPS   = 20
	DefaultEventBurst = 100
)

var eventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slipway_events_dropped_total",
	Help: "Events not recorded because the operator's event rate limit (--event-qps) was reached.",
}, []string{"controller"})

func init() { metrics.Registry.MustRegister(eventsDropped) }

func bindEventFlags(fs *flag.FlagSet, o *Options) {
	fs.Float64Var(&o.EventQPS, "event-qps", DefaultEventQPS, "Events recorded per second at most; the rest are dropped (they are in the logs); 0 means no limit")
	fs.IntVar(&o.EventBurst, "event-burst", DefaultEventBurst, "Events recorded at once at most, with --event-qps")
}

// EventRecorder returns the manager's recorder for a controller, limited to the process's event
// rate (Options.EventQPS, shared by every controller of the manager).
func (o Options) EventRecorder(mgr ctrl.Manager, name string) events.EventRecorder {
	rec := mgr.GetEventRecorder(name)
	if o.eventLimiter == nil {
		return rec
	}
	return &limitedRecorder{EventRecorder: rec, limiter: o.eventLimiter, dropped: eventsDropped.WithLabelValues(name)}
}

func newEventLimiter(qps float64, burst int) *rate.Limiter {
	if qps <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(qps), max(burst, 1))
}

type limitedRecorder struct {
	events.EventRecorder
	limiter *rate.Limiter
	dropped prometheus.Counter
}

func (r *limitedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if !r.limiter.Allow() {
		r.dropped.Inc()
		return
	}
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
