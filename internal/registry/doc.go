// Package registry is the OCI distribution client of slipway's controllers. It owns talking to
// container registries: listing the tags of a repository (with ETag revalidation and both kinds
// of pagination), asking whether a manifest exists, authentication (anonymous, Basic, and the
// Bearer token exchange announced by WWW-Authenticate), reading registry credentials from
// Kubernetes Secrets and writing them as a docker config.json, bounding how many registry
// operations run at once across the whole process, and classifying failures so callers know
// whether and when to retry.
//
// It does not pull or push content, keep metrics, or log: callers count Requests and decide what
// to record. Secret values never appear in its errors.
//
// A Client is safe for concurrent use and caches the authentication scheme and bearer tokens it
// learns per registry host, so a long-lived Client per set of credentials is cheaper than a new
// one per call. Package access keeps those clients for the controllers and reads the Secrets
// their objects name.
package registry
