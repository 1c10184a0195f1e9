// Package isoduration reads and writes ISO 8601 durations ("PT5M", "PT30S", "P1D") as the
// manager's API writes every period: the rollout requests' periods and the analyses' intervals.
package isoduration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse reads an ISO 8601 duration as the design writes them ("PT5M", "PT30S",
// "PT1H30M", "P1D", "PT0.5S", "P1W"): an optional sign, P, then days (or weeks) and after T
// hours, minutes and seconds, any of them with a decimal fraction ("." or ","). Years and months
// are refused (their length depends on the calendar). The result may be negative ("-PT5M"); the
// bound (MaxPeriod) is the caller's.
func Parse(s string) (time.Duration, error) {
	in := s
	if s == "" {
		return 0, errors.New("empty duration")
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	if s == "" || (s[0] != 'P' && s[0] != 'p') {
		return 0, fmt.Errorf("%q is not an ISO 8601 duration: it must start with P, as in PT5M", clip(in))
	}
	s = s[1:]
	if s == "" {
		return 0, fmt.Errorf("%q has no components: write e.g. PT5M or PT30S", clip(in))
	}
	var total time.Duration
	inTime, any, last := false, false, byte(0)
	for s != "" {
		if s[0] == 'T' || s[0] == 't' {
			if inTime {
				return 0, fmt.Errorf("%q has T twice", clip(in))
			}
			inTime, s = true, s[1:]
			if s == "" {
				return 0, fmt.Errorf("%q has T without hours, minutes or seconds", clip(in))
			}
			continue
		}
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',') {
			i++
		}
		if i == 0 || i == len(s) {
			return 0, fmt.Errorf("%q is not an ISO 8601 duration: expected a number followed by a unit", clip(in))
		}
		num, unitChar := s[:i], s[i]|0x20 // lower case
		s = s[i+1:]
		var unit time.Duration
		switch {
		case !inTime && unitChar == 'w':
			unit = 7 * 24 * time.Hour
		case !inTime && unitChar == 'd':
			unit = 24 * time.Hour
		case inTime && unitChar == 'h':
			unit = time.Hour
		case inTime && unitChar == 'm':
			unit = time.Minute
		case inTime && unitChar == 's':
			unit = time.Second
		case !inTime && (unitChar == 'y' || unitChar == 'm'):
			return 0, fmt.Errorf("%q uses years or months, whose length depends on the calendar: use days, hours, minutes or seconds", clip(in))
		default:
			return 0, fmt.Errorf("%q has an unknown or misplaced unit %q", clip(in), string(rune(unitChar)))
		}
		if order := unitOrder(unitChar, inTime); order <= last {
			return 0, fmt.Errorf("%q has its units out of order or repeated", clip(in))
		} else {
			last = order
		}
		v, err := component(num, unit)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", clip(in), err)
		}
		if total > time.Duration(1<<63-1)-v {
			return 0, fmt.Errorf("%q is too long", clip(in))
		}
		total += v
		any = true
	}
	if !any {
		return 0, fmt.Errorf("%q has no components", clip(in))
	}
	if neg {
		total = -total
	}
	return total, nil
}

func unitOrder(u byte, inTime bool) byte {
	if !inTime {
		if u == 'w' {
			return 1
		}
		return 2 // d
	}
	switch u {
	case 'h':
		return 3
	case 'm':
		return 4
	}
	return 5 // s
}

// component is one number (with an optional fraction) times unit, exact to the nanosecond.
func component(num string, unit time.Duration) (time.Duration, error) {
	num = strings.Replace(num, ",", ".", 1)
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" && frac == "" || strings.ContainsAny(frac, ".,") {
		return 0, fmt.Errorf("bad number %q", clip(num))
	}
	var w int64
	if whole != "" {
		var err error
		if w, err = strconv.ParseInt(whole, 10, 64); err != nil || w > int64(1<<63-1)/int64(unit) {
			return 0, errors.New("too long")
		}
	}
	d := time.Duration(w) * unit
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		f, err := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad number %q", clip(num))
		}
		// f/1e9 of a unit; unit ≤ one week, so f*(unit/1e9 ns) fits in int64 for units of whole
		// seconds, and the largest product is 999999999 * 604800 < 2^63.
		fd := time.Duration(f) * (unit / time.Second)
		if fd > time.Duration(1<<63-1)-d {
			return 0, errors.New("too long")
		}
		d += fd
	}
	return d, nil
}

// Format writes d as an ISO 8601 duration that Parse reads back ("PT5M",
// "PT1H30M", "PT0.5S", "PT0S"), in hours, minutes and seconds.
func Format(d time.Duration) string {
	if d == 0 {
		return "PT0S"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	b.WriteString("PT")
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= m * time.Minute
	}
	if d > 0 {
		sec, ns := d/time.Second, d%time.Second
		if ns == 0 {
			fmt.Fprintf(&b, "%dS", sec)
		} else {
			fmt.Fprintf(&b, "%d.%sS", sec, strings.TrimRight(fmt.Sprintf("%09d", ns), "0"))
		}
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
