// Package request resolves the body of POST /api/v1/deployments (issue 12 §1, §2; the body is
// api.DeploymentRequest, with the design's field names, so that the design's JSON pasted into a
// request works as it is):
//
//	{"operator": "cert-manager", "version": "1.14.0",
//	 "clusters": ["dev-1", "prod-eu"] | "environments": ["Dev", "Staging", "Production"],
//	 "values": {...}, "valuesByEnvironment": {"Production": {...}},
//	 "strategy": "Canary" | "BlueGreen" | "Rolling" | "Direct",
//	 "canaryConfig": {"initialPercentage": 10, "incrementPercentage": 20,
//	                  "evaluationPeriod": "PT5M", "successThreshold": 95}}
//
// api.DecodeDeploymentRequest reads it strictly (unknown fields are errors) and
// api.ResolveSettings resolves its strategy config (the CLI runs both before sending it);
// Resolve checks it against the registered clusters and resolves it once into a Spec: the
// targets, the strategy's settings with defaults applied and periods as time.Duration, the values
// per environment, the analyses. Package strategy plans a Spec; FromDeployment rebuilds the
// same Spec from a stored deployment, for the engine's steps and the API. Every error a caller can fix is an
// *invalid.Error naming the JSON path ("canaryConfig.initialPercentage",
// "rollingConfig.clusterOrder[2]", "environments[0]").
package request
