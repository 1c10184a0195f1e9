package analysis

import (
	"fmt"
	"time"
)

// Phase is an analysis run's state.
type Phase string

// Phases, as in Argo Rollouts.
const (
	Running           Phase = "Running"
	PhaseSuccessful   Phase = "Successful"
	PhaseFailed       Phase = "Failed"
	PhaseInconclusive Phase = "Inconclusive"
	PhaseError        Phase = "Error"
)

// Terminal says whether no more measurements are taken in p.
func (p Phase) Terminal() bool { return p != Running }

// Evaluate is the phase of a run of s given its measurements so far (oldest first), with why:
// Failed once more than FailureLimit measurements failed, Inconclusive once more than
// InconclusiveLimit were inconclusive, Error once more than ConsecutiveErrorLimit errors came
// in a row, Successful once Count measurements that are not errors were taken without any of
// that, else Running. An Error measurement (Prometheus unreachable, a query it refuses) does not
// count towards Count: the run measures again at the next interval, so a run never passes on
// errors alone.
func Evaluate(s Spec, ms []Measurement) (Phase, string) {
	var failed, inconclusive, errorsInRow, judged int
	for _, m := range ms {
		switch m.Verdict {
		case Failed:
			failed++
		case Inconclusive:
			inconclusive++
		}
		if m.Verdict == Error {
			errorsInRow++
		} else {
			errorsInRow = 0
			judged++
		}
		switch {
		case failed > s.FailureLimit:
			return PhaseFailed, fmt.Sprintf("analysis %s failed: %d of %d measurements failed (failureLimit %d); last: %s = %s", s.Name, failed, len(ms), s.FailureLimit, m.Query, describe(m))
		case inconclusive > s.InconclusiveLimit:
			return PhaseInconclusive, fmt.Sprintf("analysis %s inconclusive: %d measurements inconclusive (inconclusiveLimit %d); last: %s", s.Name, inconclusive, s.InconclusiveLimit, m.Message)
		case errorsInRow > s.ConsecutiveErrorLimit:
			return PhaseError, fmt.Sprintf("analysis %s errored: %d errors in a row (consecutiveErrorLimit %d); last: %s", s.Name, errorsInRow, s.ConsecutiveErrorLimit, m.Message)
		}
	}
	if judged >= s.Count {
		return PhaseSuccessful, fmt.Sprintf("analysis %s passed: %d measurements, %d failed, %d inconclusive", s.Name, judged, failed, inconclusive)
	}
	return Running, fmt.Sprintf("analysis %s: %d of %d measurements", s.Name, judged, s.Count)
}

func describe(m Measurement) string {
	if m.Value == nil {
		return m.Message
	}
	return num(*m.Value) + " (" + m.Message + ")"
}

// NextAt is when the next measurement of s is due, given the run's start and its
// measurements: at the start, then Interval after the last one. ok is false when the run is
// over (its phase is terminal).
func NextAt(s Spec, started time.Time, ms []Measurement) (at time.Time, ok bool) {
	if p, _ := Evaluate(s, ms); p.Terminal() {
		return time.Time{}, false
	}
	if len(ms) == 0 {
		return started, true
	}
	return ms[len(ms)-1].At.Add(s.Interval), true
}

// MinDuration is the least time a run of s takes: Count measurements Interval apart.
func (s Spec) MinDuration() time.Duration { return time.Duration(s.Count-1) * s.Interval }
