// Package request is the body of POST /api/v1/deployments (issue 12 §1, §2) with the design's
// field names, so that the design's JSON pasted into a request works as it is:
//
//	{"operator": "cert-manager", "version": "1.14.0",
//	 "clusters": ["dev-1", "prod-eu"] | "environments": ["Dev", "Staging", "Production"],
//	 "values": {...}, "valuesByEnvironment": {"Production": {...}},
//	 "strategy": "Canary" | "BlueGreen" | "Rolling" | "Direct",
//	 "canaryConfig": {"initialPercentage": 10, "incrementPercentage": 20,
//	                  "evaluationPeriod": "PT5M", "successThreshold": 95}}
//
// Decode reads it strictly (unknown fields are errors), Validate checks it against the registered
// clusters, and the Resolve methods turn each strategy config into settings with defaults applied
// and periods as time.Duration, for package strategy's plans. Every error a caller can fix is an
// *invalid.Error naming the JSON path ("canaryConfig.initialPercentage",
// "rollingConfig.clusterOrder[2]", "environments[0]").
package request
