// Package crds judges whether a new CustomResourceDefinition is safe to apply over an old one.
// Compare lists every schema change between two definitions with sigs.k8s.io/crdify (plus the
// pattern check crdify lacks) and says which ones break; ValidateExisting checks the custom
// resources already in a cluster against the new schema with the API server's own structural
// schema validator and names the objects that would become invalid or lose data.
//
// It holds no state and writes nothing: the HTTP server calls it and records the results.
// Encode and Digest name a CRD revision the way the store does, and FindApproval finds among a
// CRD's recorded approvals the one of a change (from one digest to another) approved through
// POST /api/v1/crds/{name}/approve, which deployment planning honours.
package crds
