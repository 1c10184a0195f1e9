// Package catalyst is the Catalyst preview-environment operator. It owns the
// catalyst.catalyst.dev/v1alpha1 Project and Environment reconcilers.
//
// An Environment becomes, in order: a namespace of its own (<team>-<project>-<environment>, see
// package naming) labelled for the environment and locked down by the pod-security standard
// "restricted"; a ResourceQuota, a LimitRange giving containers that set none requests and limits
// within it, and a default-deny NetworkPolicy in it; copies of the Secrets the Project names; the
// image for the environment's commit (found in the registry, or built by a Kaniko or BuildKit Job
// in the build namespace, whose Pod Security level must admit the engine); the deployment of the repository at that commit
// (package deploy: Helm, plain manifests or kustomize); an Ingress at <environment>.<domain>; and a
// status that follows the deployed workloads through kstatus and says why their pods are not
// coming when they do not. A finalizer deletes the namespace
// and waits until it is gone; a TTL deletes expired environments.
//
// A Project is validated (the repository answers with the credentials given, the branch exists,
// the deployment path is there at its head), counts its Environments, and its Environments
// redeploy when its deployment settings change: the revision every Environment records hashes
// them.
//
// Files: setup.go (flags and registration in the operator), rbac.go (the permissions and why),
// environment_controller.go (wiring, watches, the reconcile shape, deletion),
// environment_steps.go (the steps), environment_status.go (phase and conditions, decided in one
// place), environment_scope.go, objects.go (the namespace labels, quota, network policy and
// Ingress an environment needs), limits.go (the LimitRange), secrets.go (copies and the image pull
// Secret), build.go (the build Job), build_writes.go (its Secret and Job, written in crash-safe
// order), build_namespace.go (the build namespace's Pod Security level), source.go (credentials and the shared cache of fetched commits), registry.go,
// deployer.go (the deploy package's contract), readiness.go (kstatus over the deployed objects),
// diagnose.go (why a workload's pods are not coming),
// revision.go, ttl.go, logs.go (a failed build's log tail), memory.go (what the controller
// remembers between reconciles), project_controller.go and project_status.go, metrics.go.
// The deploy engine is package deploy; names and labels are package naming.
package catalyst
