package api_test

import (
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"PT5M", 5 * time.Minute},
		{"PT30S", 30 * time.Second},
		{"PT1H30M", 90 * time.Minute},
		{"PT1H30M15S", time.Hour + 30*time.Minute + 15*time.Second},
		{"P1D", 24 * time.Hour},
		{"P1DT2H", 26 * time.Hour},
		{"P1W", 7 * 24 * time.Hour},
		{"PT0S", 0},
		{"PT0.5S", 500 * time.Millisecond},
		{"PT1,5S", 1500 * time.Millisecond},
		{"PT0.25H", 15 * time.Minute},
		{"PT.5S", 500 * time.Millisecond},
		{"PT1.0000000019S", time.Second + time.Nanosecond}, // beyond nanoseconds is cut
		{"pt5m", 5 * time.Minute},
		{"-PT5M", -5 * time.Minute},
		{"+PT2S", 2 * time.Second},
	} {
		got, err := api.ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "-", "P", "PT", "5M", "5m", "300", "T5M", "PT5", "PT5X", "P5H", "PT5D", "P1Y", "P1M", "P1Y2M",
		"PT5M5M", "PT5S5M", "P1DT", "PT1HT5M", "PT1..5S", "PT.S", "PT1.2.3S", "PTM",
		"PT99999999999999999999S", "PT9223372036854775807H", "P9999999999999D", "P99999999W", "PT5M ", " PT5M",
	} {
		if d, err := api.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "PT0S"},
		{5 * time.Minute, "PT5M"},
		{90*time.Minute + 1500*time.Millisecond, "PT1H30M1.5S"},
		{24 * time.Hour, "PT24H"},
		{-2 * time.Second, "-PT2S"},
		{time.Nanosecond, "PT0.000000001S"},
	} {
		got := api.FormatDuration(tc.in)
		if got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := api.ParseDuration(got)
		if err != nil || back != tc.in {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", tc.in, back, err)
		}
	}
}

// FuzzParseDuration: no panic, and what parses formats back to the same duration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"PT5M", "P1DT2H3M4.5S", "-PT1S", "P1W", "PT0,000000001S", "P1Y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := api.ParseDuration(s)
		if err != nil {
			return
		}
		back, err := api.ParseDuration(api.FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("%q = %v formats as %q, which parses as %v, %v", s, d, api.FormatDuration(d), back, err)
		}
	})
}
