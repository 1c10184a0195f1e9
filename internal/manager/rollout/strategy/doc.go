// Package strategy turns a resolved deployment request (request.Spec: its target clusters and
// its strategy's settings) into a Plan: the stages the rollout engine walks, each a set of clusters installed
// together (Parallel at a time), held for a period, judged by health against a threshold, then
// paused before the next. It is pure and deterministic: the same request and targets give the
// same plan, whatever the order of the targets. PlanOf plans a stored deployment; the engine's
// steps and the API's waiting reasons both use it.
//
//   - Canary: clusters sorted by environment (Dev → Staging → Production) then name, cut into
//     the design's three stages: initialPercentage, initialPercentage + incrementPercentage,
//     then everything (10 %, 30 %, 100 %), or the stages canaryConfig.stages lists. Stage k
//     ends at ceil(p_k·N/100) clusters, at least one; a stage that would add no cluster is
//     merged into the next (1 cluster: one stage; 2 clusters: one, then the other). Stages may
//     span environments (the design's 30 % is "Dev + Staging"). Each is held for
//     evaluationPeriod and passes when healthy/len(Clusters) ≥ successThreshold. Plan.Restage
//     keeps the stages a stored deployment was created with.
//   - Rolling: one cluster per stage in rollingConfig.clusterOrder, then the rest in the default
//     order; held for validationPeriod, then pauseBetweenClusters (none after the last).
//   - Direct: one stage of all clusters, parallelClusters at a time (default all), health
//     checked unless skipHealthChecks, no hold.
//   - BlueGreen: one install stage per environment into the green namespace, held for
//     validationPeriod, then one switch stage over all clusters held for Options.SwitchMonitor
//     (5 minutes); with autoSwitch false it waits for POST /deployments/{id}/switch.
//
// Every failed stage rolls the whole deployment back; that is the engine's part. Periods are
// time.Duration, so tests run the real strategies with requests such as "PT1S".
package strategy
