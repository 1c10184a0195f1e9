package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// ChartPatch is PATCH's chart: a field left empty keeps its value; credentials absent keep
// them, null removes them, an object replaces them.
type ChartPatch struct {
	Repository  string              `json:"repository,omitempty"`
	Name        string              `json:"name,omitempty"`
	Credentials OptionalCredentials `json:"credentials"`
}

// OptionalCredentials is a credentials field that tells absent from null.
type OptionalCredentials struct {
	Present bool
	Value   *ChartCredentials
}

// UnmarshalJSON records that the field was given, and whether as null.
func (o *OptionalCredentials) UnmarshalJSON(b []byte) error {
	o.Present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Value = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c ChartCredentials
	if err := dec.Decode(&c); err != nil {
		return invalid.Reasoned("chart.credentials", "format", nil, "credentials must be an object with username and password, or token")
	}
	o.Value = &c
	return nil
}

// MarshalJSON writes the value (null when absent or removed).
func (o OptionalCredentials) MarshalJSON() ([]byte, error) { return json.Marshal(o.Value) }

// RemovedVersion is a version no longer offered: deploying it is refused, the deployments that
// used it keep their history.
type RemovedVersion struct {
	Version   string    `json:"version"`
	RemovedAt time.Time `json:"removedAt"`
	Reason    string    `json:"reason" enum:"source,filter" description:"source: the chart source no longer lists it; filter: the version filter leaves it out"`
}

// OperatorRefreshStatus is an operator's last refresh (its registration, the loop's or one asked
// for).
type OperatorRefreshStatus struct {
	CheckedAt   time.Time  `json:"checkedAt"`
	SucceededAt *time.Time `json:"succeededAt,omitempty"`
	NextAt      time.Time  `json:"nextAt" description:"when the refresh loop reads the chart source again"`
	Error       string     `json:"error,omitempty" description:"why the last refresh failed"`
	Failures    int        `json:"failures,omitempty" description:"refreshes failed in a row"`
}

// OperatorPatch changes a registered operator: what registration took, but its name and
// namespace. A new chart source is read (and each new version's chart fetched) before anything
// is stored.
type OperatorPatch struct {
	Chart *ChartPatch `json:"chart,omitempty" description:"a new chart source; a field left empty keeps its value; credentials null removes them"`
	// Versions replaces the version filter ("" keeps every version).
	Versions *string `json:"versions,omitempty" description:"a new version filter (a semver constraint; empty: every version)"`
	// Namespace cannot change (the operator's releases live there): given, it is refused.
	Namespace      *string                `json:"namespace,omitempty" description:"cannot change: refused with 400"`
	MigrationNotes []MigrationNoteRequest `json:"migrationNotes,omitempty"`
	// DefaultValues replaces the default values (null removes them).
	DefaultValues json.RawMessage `json:"defaultValues,omitempty" description:"new default values (a JSON object merged under each deployment's values); null removes them"`
}

// RefreshRequest is the optional body of POST /operators/{name}/refresh.
type RefreshRequest struct {
	// MigrationNotes are set on revisions of CRDs the operator's versions ship (new ones too).
	MigrationNotes []MigrationNoteRequest `json:"migrationNotes,omitempty"`
}

// OperatorRefreshResult is what one refresh found and stored.
type OperatorRefreshResult struct {
	Operator  string    `json:"operator"`
	CheckedAt time.Time `json:"checkedAt"`
	// NotModified: the chart repository answered that its index did not change (304).
	NotModified bool `json:"notModified"`
	// Added are the versions found and stored (with their CRDs), newest first.
	Added []string `json:"added"`
	// Removed are the versions marked removed by this refresh: gone from the source, or left
	// out by the version filter. Deployments that used them keep their history.
	Removed []string `json:"removed"`
	// Restored are versions marked removed before that the source lists again.
	Restored []string `json:"restored"`
	// Changed are versions whose chart changed behind them (another digest): their CRDs are
	// stored again.
	Changed []string `json:"changed"`
	// Failed are versions found whose chart could not be read: left out, tried again at the
	// next refresh.
	Failed []RefreshFailure `json:"failed"`
	// Versions are the operator's available versions after the refresh, newest first.
	Versions []string `json:"versions"`
}

// RefreshFailure is a version a refresh could not read.
type RefreshFailure struct {
	Version string `json:"version"`
	Message string `json:"message"`
}
