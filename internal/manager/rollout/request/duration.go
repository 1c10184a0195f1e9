package request

import (
	"time"

	"github.com/slipway-dev/slipway/internal/isoduration"
)

// MaxPeriod bounds every period of a request (evaluationPeriod, validationPeriod,
// pauseBetweenClusters, bakeWindow): a deployment that holds a stage for more than a day is a
// mistake.
const MaxPeriod = 24 * time.Hour

// ParseDuration reads an ISO 8601 duration as the design writes them ("PT5M", "PT30S",
// "PT1H30M", "P1D", "PT0.5S", "P1W"): isoduration.Parse. The bound (MaxPeriod) is the caller's.
func ParseDuration(s string) (time.Duration, error) { return isoduration.Parse(s) }

// FormatDuration writes d as an ISO 8601 duration that ParseDuration reads back: isoduration.Format.
func FormatDuration(d time.Duration) string { return isoduration.Format(d) }

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
