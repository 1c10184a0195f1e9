// Package api is the operator manager's wire contract: every request and response body of its
// REST API, as routes.go (internal/manager/server) declares them and api/manager/openapi.json
// (the web UI's TypeScript types) is generated from them. The JSON names and shapes are the
// contract: scripts, the CLI and the web UI rely on them, and the design's example bodies decode
// into them (design_test.go).
//
// It holds the bodies and the rules of the deployment request that need no server state
// (DecodeDeploymentRequest reads a body strictly, ResolveSettings checks the strategy config and
// applies its defaults), so that the CLI refuses what the server would before sending anything.
//
// The package imports the standard library and small leaf packages only (isoduration, invalid,
// apimachinery's DNS label check), never the server, the rollout engine, the store or Helm: the
// CLI decodes with it and stays a client (cmd/slipway's TestDeps_OnlyAClient and
// TestDeps_APIIsALeaf). The server converts its store and engine values into these types at the
// edge; the store does not know them.
package api
