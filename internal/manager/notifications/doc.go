// Package notifications tells people what happens to their operators and clusters (issue 19
// §3; the design: "Unhealthy operators trigger alerts"). An Admin configures channels through the
// API: a generic webhook (JSON POST signed with HMAC-SHA256 over a timestamp and the body, with a
// secret of the channel's), a Slack-compatible incoming webhook, or mail through the manager's
// SMTP server. Routes say which event kinds of which environments go to a channel.
//
// Deliveries are durable: the change that causes a notification (a deployment becoming Failed,
// an operator's health check turning Unhealthy, a cluster's check failing) stores one delivery
// row per matching channel in its own transaction, so a notification exists exactly when its
// cause was recorded. Every replica runs a Worker that claims due deliveries under a lease, per
// channel and a few at a time, sends each within a timeout and records the outcome: delivered,
// or retried with exponential backoff until a bounded time, then failed. A replica that dies
// mid-delivery leaves its claim to lapse and another replica sends again: at least once, each
// delivery under one stable id (X-Slipway-Delivery) receivers deduplicate by.
//
// Secrets (webhook URLs, which often carry a token, and HMAC secrets) are sealed by the
// manager's keyring like cluster credentials; the API shows a channel's endpoint as scheme and
// host only, and no payload, error or log line carries a secret.
package notifications
