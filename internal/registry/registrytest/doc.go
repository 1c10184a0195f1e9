// Package registrytest runs real registries for tests of code that talks to OCI registries.
//
// It owns three things: StartDistribution, which runs the real distribution registry binary
// (Debian's docker-registry, distribution 2.8) on a free loopback port for one test, optionally
// behind htpasswd Basic authentication and over TLS with its own CA; PushChart and PushBundle,
// which push real OCI Helm chart artifacts the way helm and werf publish them; and FaultProxy, a
// reverse proxy put in front of a registry that injects programmable faults (errors, hangs,
// resets, rate limits, malformed and huge bodies), adds the ETag revalidation distribution 2.8
// lacks on tag lists, can demand a real Bearer token exchange, and counts what it served.
//
// Nothing here fakes the registry protocol: a test that passes against these servers has talked
// to a real registry through real HTTP.
package registrytest
