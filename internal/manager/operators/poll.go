package operators

import (
	"context"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// Validators are what a chart repository said of its index.yaml (ETag, Last-Modified), sent back
// with the next read (If-None-Match, If-Modified-Since) so that an index that did not change
// costs a 304 and no parsing.
type Validators struct {
	ETag         string
	LastModified string
}

func (v Validators) empty() bool { return v.ETag == "" && v.LastModified == "" }

// PollState is what a refresh knows from the one before.
type PollState struct {
	// Validators of the index read last (HTTP repositories; ignored for OCI).
	Validators Validators
	// Known are the versions stored already, by version string: an OCI source describes only
	// the tags not among them (one tag list, then a manifest and config per new tag).
	Known map[string]Version
}

// Polled is a refresh's reading of a chart source.
type Polled struct {
	// NotModified: the repository answered that its index did not change since
	// PollState.Validators; Versions is nil.
	NotModified bool
	// Versions are every semver version of the chart, newest first, without the operator's
	// filter (FilterVersions applies it).
	Versions []Version
	// Validators to send with the next poll ("" when the source gave none).
	Validators Validators
}

// poller is a Source that can be read conditionally or cheaply.
type poller interface {
	poll(ctx context.Context, ref ChartRef, st PollState) (*Polled, error)
}

// Poll reads the chart's versions again for a refresh: conditionally for an HTTP repository
// (If-None-Match / If-Modified-Since with st.Validators: an unchanged index is NotModified), and
// for OCI one tag list plus the manifest and config of each tag not in st.Known. Errors are
// Discover's (*invalid.Error naming chart.repository or chart.name); a chart without a semver
// version has an empty Versions, not an error: every version is gone.
func (c *Charts) Poll(ctx context.Context, ref ChartRef, st PollState) (*Polled, error) {
	src, err := c.source(ref)
	if err != nil {
		return nil, err
	}
	polled, err := src.(poller).poll(ctx, ref, st)
	if err != nil || polled.NotModified {
		return polled, err
	}
	polled.Versions = semverNewestFirst(polled.Versions)
	return polled, nil
}

// FilterVersions keeps the versions (as Poll lists them) that filter admits, in order; "" keeps
// all. A bad filter is *invalid.Error for field versions.
func FilterVersions(vs []Version, filter string) ([]Version, error) {
	constraint, err := ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	out := make([]Version, 0, len(vs))
	for _, v := range vs {
		sem, err := semver.NewVersion(v.Version)
		if err == nil && (constraint == nil || constraint.Check(sem)) {
			out = append(out, v)
		}
	}
	return out, nil
}

// semverNewestFirst keeps the versions Helm parses as semver, one per semver value, newest first.
func semverNewestFirst(listed []Version) []Version {
	type parsed struct {
		v   Version
		sem *semver.Version
	}
	var all []parsed
	seen := map[string]bool{}
	for _, v := range listed {
		// Helm's own rule: what Masterminds parses (a leading v and a short "1.2" included).
		sem, err := semver.NewVersion(v.Version)
		if err != nil || seen[sem.String()] {
			continue
		}
		seen[sem.String()] = true
		all = append(all, parsed{v, sem})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].sem.GreaterThan(all[j].sem) })
	out := make([]Version, len(all))
	for i, p := range all {
		out[i] = p.v
	}
	return out
}

// InspectVersion fetches one version of the chart and extracts its CRDs, as Inspect does for
// each version at registration: a chart that does not load or render is *invalid.Error for
// field versions (reason badChart), a source failure is reported like Discover's.
func (c *Charts) InspectVersion(ctx context.Context, ref ChartRef, v Version) (VersionCRDs, error) {
	return c.inspectVersion(ctx, ref, v)
}
