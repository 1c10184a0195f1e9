package ratelimit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// normalizeLabel upper-cases the method and collapses the space before the path.
func normalizeLabel(label string) string {
	m, p, ok := strings.Cut(strings.TrimSpace(label), " ")
	if !ok {
		return label
	}
	return strings.ToUpper(m) + " " + strings.TrimSpace(p)
}

// ParseRules reads a flag value: comma-separated "METHOD /path=N/period" entries, where period is
// s, sec, second, m, min, minute, h, hour, or a Go duration ("10s", "1m30s"):
//
//	POST /api/v1/clusters=5/min,GET /api/v1/operators=60/min
//
// The result replaces the defaults; an empty value means no limits at all.
func ParseRules(s string) (map[string]Rule, error) {
	rules := map[string]Rule{}
	if strings.TrimSpace(s) == "" {
		return rules, nil
	}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		at := fmt.Sprintf("rate limit %d (%q)", i+1, entry)
		eq := strings.LastIndex(entry, "=")
		if eq < 0 {
			return nil, fmt.Errorf("%s: want \"METHOD /path=N/period\", e.g. \"POST /api/v1/clusters=5/min\"", at)
		}
		label, err := parseLabel(entry[:eq])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		rule, err := parseRule(strings.TrimSpace(entry[eq+1:]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if _, dup := rules[label]; dup {
			return nil, fmt.Errorf("%s: %s is limited twice", at, label)
		}
		rules[label] = rule
	}
	return rules, nil
}

func parseLabel(s string) (string, error) {
	m, p, ok := strings.Cut(strings.TrimSpace(s), " ")
	p = strings.TrimSpace(p)
	if !ok || p == "" {
		return "", fmt.Errorf("route %q: want \"METHOD /path\"", s)
	}
	m = strings.ToUpper(m)
	if !slices.Contains(methods, m) {
		return "", fmt.Errorf("route %q: unknown method %q (want one of %s)", s, m, strings.Join(methods, ", "))
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t") {
		return "", fmt.Errorf("route %q: the path must start with / and hold no spaces", s)
	}
	return m + " " + p, nil
}

func parseRule(s string) (Rule, error) {
	n, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rule{}, fmt.Errorf("limit %q: want N/period, e.g. 5/min", s)
	}
	events, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || events <= 0 {
		return Rule{}, fmt.Errorf("limit %q: %q is not a positive whole number of requests", s, n)
	}
	d, err := parsePeriod(strings.TrimSpace(per))
	if err != nil {
		return Rule{}, fmt.Errorf("limit %q: %w", s, err)
	}
	return Rule{Events: events, Per: d}, nil
}

func parsePeriod(s string) (time.Duration, error) {
	switch strings.ToLower(s) {
	case "s", "sec", "second":
		return time.Second, nil
	case "m", "min", "minute":
		return time.Minute, nil
	case "h", "hour":
		return time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("period %q: want s, min, hour or a duration of at least 1s", s)
	}
	return d, nil
}

// FormatRules writes rules in ParseRules' syntax, sorted by label, for a flag's default text.
func FormatRules(rules map[string]Rule) string {
	labels := make([]string, 0, len(rules))
	for l := range rules {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		r := rules[l]
		per := r.Per.String()
		switch r.Per {
		case time.Second:
			per = "s"
		case time.Minute:
			per = "min"
		case time.Hour:
			per = "hour"
		}
		fmt.Fprintf(&b, "%s=%d/%s", l, r.Events, per)
	}
	return b.String()
}
