// Package notify mails people about pending approvals (issue 12 §5): a Mailer that submits one
// message over SMTP with STARTTLS and authentication (emersion/go-smtp), a template for a pending
// approval with its approve and reject URLs, and a Notifier that queues approvals and sends each
// within seconds of Enqueue, retrying with exponential backoff and giving up after a bound.
//
// The Notifier's queue is in memory: it gets a mail out fast and survives a flaky server, not a
// crash of the process. The rollout engine that enqueues (on creating an approval) learns each
// outcome through Config.OnResult and may enqueue again what a stopped replica did not deliver.
package notify
