// Package receiver is the WerfBundle controller's HTTP endpoint for registry push notifications.
// Polling finds new tags eventually; a notification makes the WerfBundles watching the pushed
// repository poll at once. The package owns the HTTP server, authenticating senders,
// understanding their payloads and counting requests; mapping a repository to WerfBundles and
// recording the push on them is the controller's, behind the Trigger interface.
//
// # Endpoints
//
// POST /hook detects the payload format; /hook/distribution and /hook/harbor accept only the
// named sender's format and answer 400 to any other. Responses are JSON: 202 {"events":N,"triggered":M} where N counts the
// distinct tag pushes in the payload and M the WerfBundles the pushes were recorded on; 503
// {"events":N,"triggered":M,"error":"..."} with Retry-After when Trigger failed for some push (the
// API server was unreachable, a patch was refused), so the sender retries the whole delivery;
// otherwise {"error":"..."} with 400 (malformed JSON, unknown format), 401 (missing or wrong credentials),
// 405 (not POST) or 413 (body larger than Options.MaxBodyBytes, 1 MiB by default). A well-formed
// notification without tag pushes (a pull, a delete, a blob upload) is accepted with N = 0, so
// senders that retry failed deliveries do not retry it.
//
// # Formats
//
//   - Docker distribution notifications (Content-Type
//     application/vnd.docker.distribution.events.v1+json, or v2+json from distribution 3):
//     {"events":[{"action":"push","target":{"repository":"org/app","tag":"1.2.3","url":...},
//     "request":{"host":"registry.example.com:5000"}}]}. Only "push" events with a tag count; the
//     registry host is request.host (the name clients pushed to), else the host of target.url.
//     Configure the endpoint with an Authorization header and, to save requests, ignore pulls
//     (see the example below).
//
//   - Harbor webhooks of type PUSH_ARTIFACT in the Default payload format
//     {"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"1.2.3",
//     "resource_url":"harbor.example.com/project/repo:1.2.3"}],"repository":{...}}}, and
//     harbor.artifact.pushed in the CloudEvents format (structured, or binary with a Ce-Type
//     header). The repository comes from each resource_url, which carries Harbor's external host.
//     Set the webhook's "Auth Header" to the secret (or "Bearer <secret>").
//
//   - A generic format for scripts and CI: {"repository":"registry.example.com/org/app","tag":"1.2.3"}.
//     Unlike the others it must name exactly one valid repository and tag, else the request fails.
//
// A distribution registry's configuration for the receiver:
//
//	notifications:
//	  endpoints:
//	    - name: slipway
//	      url: https://slipway-receiver.example/hook/distribution
//	      headers:
//	        Authorization: [Bearer <secret>]
//	      ignore:
//	        actions: [pull]
//
// Repositories are matched in NormalizeRepository form (host[:port]/path with a lower-case host
// and Docker Hub's implied parts filled in), which the controller applies to spec.registry.url too.
// Tags must be valid OCI tags; events with an unusable repository or tag are ignored.
//
// # Authentication
//
// Every request must prove it knows the shared secret (Options.Secret), either in the
// Authorization header, as "Bearer <secret>" or verbatim, or by signing the body:
// X-Slipway-Signature: sha256=<hex HMAC-SHA256 of the body under the secret> (see Sign).
// Comparisons take constant time, and neither the secret, the Authorization header nor the
// signature is ever logged. Requests are rejected before their body is read unless they carry a
// valid Authorization header or a signature to check. Rejections of unauthenticated requests are
// logged at V(1) only.
//
// # Running
//
// A Server is a controller-runtime Runnable: add it to the manager with mgr.Add. It runs on every
// replica, leader or not: Trigger records each push in the API server before the receiver answers
// 202, and the leader's controller acts on it, so a Service in front of all replicas works and an
// acknowledged push survives the leader's death. Start refuses to run without a secret and
// shuts down gracefully when its context ends, finishing requests in flight.
//
// Metrics, registered with controller-runtime's registry: slipway_werfbundle_webhook_requests_total
// by result (accepted, unauthorized, bad_request, too_large, method_not_allowed, failed), and
// slipway_werfbundle_webhook_triggers_total, the WerfBundles pushes were recorded on.
package receiver
