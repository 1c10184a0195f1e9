// Package webapp holds the admission webhooks of WebApp (webapp.slipway.dev/v1).
//
//   - Mutating (/mutate-webapp-slipway-dev-v1-webapp, create and update): fills in replicas (1),
//     port (80) and serviceType (ClusterIP) when the request leaves them out, sets the label
//     app.kubernetes.io/name to the WebApp's name unless it is set, and always sets
//     app.kubernetes.io/managed-by: slipway. An explicit port 0 is left for validation to
//     reject, never turned into 80. With generateName the API server picks the name after
//     admission, so the name label is added by the first update.
//   - Validating (/validate-webapp-slipway-dev-v1-webapp, create and update): spec.image must be
//     a valid image reference that names a tag or a digest (no implicit "latest"), spec.replicas
//     within 0..MaxReplicas, spec.port within 1..65535. Every problem is reported at once as a
//     field.ErrorList in one Invalid status, so kubectl shows them all. On update a value that
//     did not change is not held against the object (it is reported as a warning), so a WebApp
//     stored before a rule tightened can still be relabelled or deleted.
//   - Validating (/validate-webapp-slipway-dev-v1-webapp-scale, update of webapps/scale): the
//     same replica bound for kubectl scale and autoscalers, which bypass the WebApp validator.
//
// The CRD schema checks some of this too (port range, replicas >= 0); the API server applies the
// schema after the mutating and before the validating webhooks, so a port outside 1..65535 is
// refused by the schema before the validator sees it.
//
// The serving certificate, its rotation and the CA injection are package webhookcert's; the
// server runs on every operator replica.
package webapp
