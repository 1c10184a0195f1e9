// Package operators is where the manager learns about operators' Helm charts: it discovers a
// chart's versions from its source (an HTTP chart repository's index.yaml, or the tags of an OCI
// repository), fetches a version's archive, and extracts the CustomResourceDefinitions the chart
// ships (crds/ and rendered templates). It validates an operator request's name, namespace and
// chart before registration and returns *invalid.Error for anything the caller can fix.
//
// It is a service over the network, not over the store: callers (the HTTP server) write what it
// returns. Part 2 installs the charts Fetch returns with the Helm SDK.
package operators
