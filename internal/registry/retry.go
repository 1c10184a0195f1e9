package registry

import "time"

// MaxRetryAfter is the longest Retry-After honoured: a longer hint (a bogus header, or a date
// far ahead) waits this long, so a registry cannot park a caller for days. Hints up to an hour
// are honoured in full.
const MaxRetryAfter = time.Hour

// RetryDelay is the wait before retrying an operation that failed with err, for the caller's
// backoff of this failure and a uniform random draw u in [0, 1):
//
//   - when err carries the registry's Retry-After, that delay (at most MaxRetryAfter) plus up to
//     10 %: the retry never comes before the time the registry asked for, and callers told the
//     same delay together do not all come back at once;
//   - otherwise the backoff ±10 %.
//
// The Retry-After replaces the backoff, shorter or longer: the registry knows when it takes
// requests again.
func RetryDelay(err error, backoff time.Duration, u float64) time.Duration {
	if ra, ok := RetryAfter(err); ok {
		return SpreadUp(min(ra, MaxRetryAfter), u)
	}
	return Spread(backoff, u)
}

// Spread is d×(0.9 + 0.2×u) for u in [0, 1): ±10 %.
func Spread(d time.Duration, u float64) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (0.9 + 0.2*u))
}

// SpreadUp is d×(1 + 0.1×u) for u in [0, 1): up to 10 % later, never earlier.
func SpreadUp(d time.Duration, u float64) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + 0.1*u))
}
