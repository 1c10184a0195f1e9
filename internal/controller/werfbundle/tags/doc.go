// Package tags chooses which tag of an OCI repository a WerfBundle deploys. It owns parsing
// spec.registry.versionConstraint and selecting, from the tags a registry lists, the highest
// semantic version that satisfies it.
//
// A tag counts as a version only when it is a full MAJOR.MINOR.PATCH semantic version, with
// optional prerelease and build metadata, and optionally one leading "v" (v1.2.3). Anything else
// (latest, main, sha-abc, 1.2, 01.2.3, V1.2.3) is not a version and is ignored. The selected tag
// is returned as the registry spells it.
//
// Constraints use the syntax and semantics of github.com/Masterminds/semver/v3: comparisons
// (>=1.2.0 <2.0.0, commas or spaces for AND), || for OR, ~ and ^ ranges, x and * wildcards and
// hyphen ranges (1.2 - 1.5). An empty constraint means any stable version. Prereleases are
// candidates only for an OR group of the constraint that itself names a prerelease
// (>=1.0.0-0 admits 2.0.0-rc.1); they are never selected by an empty constraint.
//
// Build metadata does not take part in precedence. When several tags denote the same version
// (1.2.3, v1.2.3, 1.2.3+build.7) the choice is deterministic and independent of the order of the
// input: a tag without build metadata first, then one without a leading "v", then the
// lexically smallest.
//
// It does not talk to registries, log or keep metrics.
package tags
