package sqlstore

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// TimeLayout is how SQLite stores times: UTC, fixed-width microseconds, so text order is time order.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// timeDest scans a non-NULL time stored either as a time (PostgreSQL) or as TimeLayout text (SQLite).
type timeDest struct{ t *time.Time }

func (d timeDest) Scan(v any) error {
	if v == nil {
		return fmt.Errorf("scan time: NULL")
	}
	t, err := toTime(v)
	if err != nil {
		return err
	}
	*d.t = t
	return nil
}

// nullTimeDest scans a nullable time into a *time.Time (nil for NULL).
type nullTimeDest struct{ t **time.Time }

func (d nullTimeDest) Scan(v any) error {
	if v == nil {
		*d.t = nil
		return nil
	}
	t, err := toTime(v)
	if err != nil {
		return err
	}
	*d.t = &t
	return nil
}

func toTime(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UTC(), nil
	case string:
		return parseTime(v)
	case []byte:
		return parseTime(string(v))
	default:
		return time.Time{}, fmt.Errorf("scan time: unexpected %T", v)
	}
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		if t, err2 := time.Parse(time.RFC3339Nano, s); err2 == nil {
			return t.UTC(), nil
		}
		return time.Time{}, fmt.Errorf("scan time %q: %w", s, err)
	}
	return t, nil
}

// nullString scans a nullable text column into a string ("" for NULL).
// millisDest scans an integer column of milliseconds into a time.Duration.
type millisDest struct{ d *time.Duration }

func (d millisDest) Scan(v any) error {
	ms, ok := v.(int64)
	if !ok {
		return fmt.Errorf("milliseconds: want an integer, not %T", v)
	}
	*d.d = time.Duration(ms) * time.Millisecond
	return nil
}

type nullString struct{ s *string }

func (d nullString) Scan(v any) error {
	var ns sql.NullString
	if err := ns.Scan(v); err != nil {
		return err
	}
	*d.s = ns.String
	return nil
}

// normalizeID returns the canonical (lowercase, hyphenated) form of a UUID, and whether s is one.
func normalizeID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", false
	}
	return u.String(), true
}

// emptyNil stores an empty byte slice as NULL.
func emptyNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// nullIfEmpty stores "" as NULL.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
