// Package strategy turns a validated deployment request (package request) and its target
// clusters into a Plan: the stages the rollout engine walks, each a set of clusters installed
// together (Parallel at a time), held for a period, judged by health against a threshold, then
// paused before the next. It is pure and deterministic: the same request and targets give the
// same plan, whatever the order of the targets.
//
//   - Canary: clusters sorted by environment (Dev → Staging → Production) then name; stage k
//     ends at ceil(p_k·N/100) clusters, p_0 = initialPercentage, p_k+1 = p_k +
//     incrementPercentage capped at 100; a percentage that adds no cluster adds no stage (each
//     stage has at least one); a stage never mixes environments: one that would cross an
//     environment boundary ends at it and the rest forms the next stage. Each is held for
//     evaluationPeriod and passes when healthy/len(Clusters) ≥ successThreshold.
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
