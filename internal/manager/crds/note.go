package crds

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Limits of a migration note.
const (
	// MaxNoteText bounds a note's markdown text, in characters.
	MaxNoteText = 10000
	// MaxNoteURL bounds a note's link, in bytes.
	MaxNoteURL = 2048
)

// CheckNote validates a migration note as the API takes it (field names it in errors): text
// (markdown, at most MaxNoteText characters), url (an absolute https:// or http:// URL with a
// host and without credentials, at most MaxNoteURL bytes), at least one of them. Surrounding
// spaces are trimmed.
func CheckNote(field string, n store.MigrationNote) (store.MigrationNote, error) {
	n.Text, n.URL = strings.TrimSpace(n.Text), strings.TrimSpace(n.URL)
	if n.IsZero() {
		return n, invalid.Field(field, "a migration note needs text (markdown), url, or both")
	}
	if c := utf8.RuneCountInString(n.Text); c > MaxNoteText {
		return n, invalid.Field(field+".text", "at most %d characters, not %d", MaxNoteText, c)
	}
	if !utf8.ValidString(n.Text) {
		return n, invalid.Field(field+".text", "not valid UTF-8")
	}
	if n.URL == "" {
		return n, nil
	}
	if len(n.URL) > MaxNoteURL {
		return n, invalid.Field(field+".url", "at most %d bytes, not %d", MaxNoteURL, len(n.URL))
	}
	u, err := url.Parse(n.URL)
	switch {
	case err != nil:
		return n, invalid.Field(field+".url", "not a URL: %v", err)
	case u.Scheme != "https" && u.Scheme != "http":
		return n, invalid.Field(field+".url", "must be an https:// or http:// URL, not scheme %q", u.Scheme)
	case u.Host == "":
		return n, invalid.Field(field+".url", "must be an absolute URL with a host")
	case u.User != nil:
		return n, invalid.Field(field+".url", "must not carry credentials")
	}
	return n, nil
}

// VersionNote is a migration note for the revision of CRD that one operator version ships.
// Version "" means the newest version that ships the CRD.
type VersionNote struct {
	CRD     string
	Version string
	Note    store.MigrationNote
}

// ApplyNotes sets each note (already checked with CheckNote) on the revision its version ships,
// replacing the note the revision had; field names the list in errors ("migrationNotes"): an
// unknown version, a version that does not ship the CRD, and two notes for one revision are
// *invalid.Error. Run it in the transaction that recorded the versions (RecordVersion).
func ApplyNotes(ctx context.Context, exec store.Executor, operatorID, field string, notes []VersionNote) error {
	seen := map[int64]int{}
	for i, n := range notes {
		f := fmt.Sprintf("%s[%d]", field, i)
		h, err := LoadHistory(ctx, exec, operatorID, n.CRD)
		if err != nil {
			return err
		}
		s, err := noteTarget(h, f, n)
		if err != nil {
			return err
		}
		if j, dup := seen[s.Row.SchemaID]; dup {
			return invalid.Field(f, "names the same revision of %s as %s[%d] (version %s ships it too)", n.CRD, field, j, s.Version)
		}
		seen[s.Row.SchemaID] = i
		if _, err := exec.CRDSchemaSetNote(ctx, &store.CRDSchemaSetNoteParams{ID: s.Row.SchemaID, Note: n.Note}); err != nil {
			return err
		}
	}
	return nil
}

// noteTarget is the revision a note is for.
func noteTarget(h *History, field string, n VersionNote) (Shipped, error) {
	if n.Version == "" {
		for _, v := range h.versions {
			if s := h.At(v, n.CRD); s.Row != nil {
				return s, nil
			}
		}
		return Shipped{}, invalid.Field(field+".crd", "no version of the operator ships CRD %q", n.CRD)
	}
	if !h.Has(n.Version) {
		return Shipped{}, invalid.Field(field+".version", "the operator has no version %q", n.Version)
	}
	s := h.At(n.Version, n.CRD)
	if s.Row == nil {
		return Shipped{}, invalid.Field(field+".crd", "version %s does not ship CRD %q", n.Version, n.CRD)
	}
	return s, nil
}
