// Package deploy puts an application into a Catalyst environment's namespace from the repository
// checked out at the environment's commit: a Helm chart (Helm SDK v4), plain manifests, or a
// kustomization (kustomize API). The Environment controller calls it once per environment, after
// it has created the namespace and fetched the repository (internal/gitsource):
//
//	engine, err := deploy.New(restConfig, deploy.Options{})
//	res, err := engine.Deploy(ctx, deploy.Request{
//		Namespace: "my-team-my-project-pr-123", Release: "pr-123",
//		Type: catalystv1alpha1.DeploymentTypeHelm, Source: checkoutDir, Path: "charts/app",
//		Values: projectValues, Image: deploy.Image{Repository: "registry.example.dev/org/app", Tag: sha},
//		Host: "pr-123.preview.example.dev", Env: envVars, Labels: environmentLabels,
//	})
//	// res.Revision, res.Objects (check them with kstatus)
//	err = engine.Uninstall(ctx, namespace, "pr-123")
//
// Deploy returns once the objects are applied; it does not wait for them to become ready (Helm
// can be told to, see HelmOptions). The caller checks Result.Objects with kstatus.
//
// # The environment stays in its namespace
//
// Every object, whatever the type (Helm hooks included), must be namespaced and either name no
// namespace or the environment's: a cluster-scoped object (Namespace, ClusterRole, CRD, ...), an
// object for another namespace and a kind the cluster does not serve are refused with
// ErrRefusedObject before anything is applied, and so is a chart with CRDs in crds/. Files are
// read through an os.Root on Request.Source, so neither a path nor a symbolic link leads out of
// the checkout. Charts and kustomizations render in a child process (render.go) with no
// credential, no network and no programs (render_sandbox_linux.go); a kustomization that names a
// URL, a remote base or a path outside the repository in any field is refused with the field
// (kustomize_check.go). Nothing is downloaded and no plugin or external program runs.
//
// # The API server judges before anything is written
//
// What passes those checks is then sent to the API server as the deployer with server-side apply
// and dryRun=All (admission.go), Helm hooks included (test hooks, never run, aside): Pod Security,
// quotas and every admission policy of the cluster judge each object as if it were written. Every
// refusal is collected into one ErrRefusedObject naming each object, its file and the server's
// message (which names the rule), and nothing is written: no object, no inventory, no release
// Secret. The same refusal met by a real write afterwards (a rule or a quota changed meanwhile) is
// reported the same way, with the object and its file. A quota an object alone asks more of than
// its hard limit is a refusal; one that is full now, or not counted yet, is transient.
//
// # helm
//
// One release per environment, named Request.Release, stored as Secrets in the namespace
// (Helm's default driver). Deploy installs it, or upgrades it when it exists (values reset to
// exactly what is passed, server-side apply with forced conflicts, at most HelmOptions.MaxHistory
// revisions kept). A revision left pending by an interrupted deploy is marked failed first, so the
// release never stays locked. HelmOptions.RollbackOnFailure is Helm's --atomic. The chart is loaded
// from the checkout honouring .helmignore; dependencies must be vendored in charts/.
//
// The values are the project's values (Request.Values) with these deep-merged over them (maps are
// merged key by key, anything else is replaced); a chart uses them to receive the environment:
//
//	image.repository  Request.Image.Repository                     (when set)
//	image.tag         Request.Image.Tag                            (when set and not a digest)
//	image.digest      Request.Image.Tag when it starts with sha256:
//	ingress.host      Request.Host                                 (when set)
//
// Request.Env is not a value. Charts name their variables in many ways (env as a list or a map,
// extraEnvs, extraEnv, none at all) and some use env for something else, so merging into a value
// either missed the containers or broke the chart. The post-renderer sets Request.Env on every
// container and init container of every workload the chart renders (hooks included, test hooks
// aside), as for manifest and kustomize below: a variable the chart sets itself is kept unless
// Request.Env names it, and then it is replaced in place. Result.EnvContainers counts the
// containers. Request.Labels are added to every rendered object (by the same post-renderer) and
// to the release Secrets.
//
// # manifest and kustomize
//
// manifest reads every *.yaml, *.yml and *.json file under Path, recursively and in lexical order
// (names starting with a dot are skipped), as multi-document YAML; v1 Lists are expanded.
// kustomize builds the kustomization in Path like `kustomize build` with its default options, in
// the renderer. Then
// both are treated alike:
//
//   - metadata.namespace is set to Request.Namespace, Request.Labels are merged over each object's
//     labels (metadata only: selectors and pod templates are left alone), and the annotation
//     catalyst.dev/release names the release;
//   - in the pod templates of Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets,
//     ReplicationControllers, Jobs and CronJobs, every container and init container gets
//     Request.Env (a variable of the same name is replaced in place, others are appended; the
//     deployment's other variables are kept; Result.EnvContainers counts them); and a
//     container's image is replaced by Request.Image when its repository matches: it is
//     Image.Repository (nginx and docker.io/library/nginx are the same), or it is the last
//     element of Image.Repository alone, the placeholder form: with Image.Repository
//     registry.example.dev/org/app, images app, app:latest and registry.example.dev/org/app:v1
//     all become registry.example.dev/org/app:<Image.Tag>, and sidecars such as redis:7 are left
//     as they are. Without Image.Tag the image keeps its own tag or digest;
//   - with Request.Host, every rule of an Ingress gets that host and its TLS entries list it
//     alone; Gateway API HTTPRoutes and GRPCRoutes get it as their only hostname. So an
//     environment never claims the host of another one (or of production);
//   - the objects are applied with server-side apply (field manager slipway-catalyst, conflicts
//     forced), ConfigMaps, Secrets, ServiceAccounts, RBAC and Services before workloads;
//   - the inventory, ConfigMap catalyst-inventory-<release> in the namespace, lists the objects
//     applied (apiVersion, kind, name) and counts revisions. Objects of the previous revision
//     that are gone from this one are deleted (pruned), provided they still carry the
//     catalyst.dev/release annotation of the release. While a deploy runs the inventory lists the
//     previous and the new objects together, so an interrupted deploy leaks nothing.
//
// Values are refused for these types (ErrInvalidRequest): Project validation allows them for helm
// only.
//
// # Changing type
//
// A release deployed with helm and then with manifest or kustomize (or the other way) is moved
// over: the previous engine's objects are deleted first (the Helm release is uninstalled, or the
// inventory's objects are deleted), then the new ones are applied. A manifest or kustomize deploy
// looks for a Helm release only while the release has no inventory yet, so later deploys do not
// pay for it.
//
// # Concurrency
//
// An Engine serves concurrent deploys of different releases. Deploys of one release must not
// overlap (the controller's work queue guarantees that). Kustomize builds are serialised: kyaml
// keeps the OpenAPI schema in a global.
//
// # Errors
//
// Errors wrap ErrInvalidRequest, ErrPathNotFound, ErrInvalidChart, ErrInvalidManifest,
// ErrKustomizeBuild, ErrRefusedObject, ErrApplyConflict, ErrApplyRejected or ErrHelmRelease when
// they are one of those, and say which file, document or object is at fault; others (the API
// server unreachable, a timeout) come as they are. Reason maps an error to the DeploymentReady
// reason (DeploymentPathNotFound, RenderFailed, DeploymentFailed) and Stalled says whether
// retrying the same commit is pointless. Messages never hold object content, and the API server's
// messages about a Secret are reduced to its reason and field paths.
package deploy
