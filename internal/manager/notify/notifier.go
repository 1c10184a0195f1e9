package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// Sender sends one message, one attempt: *Mailer.
type Sender interface {
	Send(ctx context.Context, msg Message) error
}

// Backoff is the retry schedule: wait Initial after the first failure, doubling up to Max, and
// give up after Attempts sends in all.
type Backoff struct {
	Initial  time.Duration // default 1 s
	Max      time.Duration // default 30 s
	Attempts int           // default 6 (about a minute of waits with the defaults)
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = time.Second
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Attempts <= 0 {
		b.Attempts = 6
	}
	return b
}

// Delay is the wait after the n-th failed attempt (n from 1).
func (b Backoff) Delay(n int) time.Duration {
	b = b.withDefaults()
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Config configures a Notifier.
type Config struct {
	// Sender sends the mail (a *Mailer).
	Sender Sender
	// BaseURL is the manager's public URL, under which the approve and reject links point.
	BaseURL string
	// Recipients maps a required role ("Admin", "EnvironmentOwner:Production") to the addresses
	// that decide it; the key "*" receives every approval. The manager has no user directory
	// (identities come from tokens), so who approves is configuration.
	Recipients map[string][]string
	Backoff    Backoff
	// Workers send in parallel, so one approval in backoff does not hold up the others (default 2).
	Workers int
	// QueueSize bounds the approvals waiting to be sent (default 1000).
	QueueSize int
	// Sleep waits between attempts (default: a timer; tests inject their own). It returns
	// ctx's error when ctx ends first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for the Date header (default time.Now).
	Now func() time.Time
	Log *slog.Logger
	// OnResult, when set, learns each approval's outcome: delivered, given up, or dropped on Stop.
	// The workers call it, concurrently; it should return quickly (record an event, count).
	OnResult func(Result)
}

// Result is what became of one approval's mail.
type Result struct {
	Pending  Pending
	To       []string
	Attempts int
	// Err is nil when the mail was delivered; otherwise the last error (ErrStopped when Stop
	// came first).
	Err error
}

var (
	// ErrQueueFull: Enqueue found the queue at QueueSize.
	ErrQueueFull = errors.New("notify: queue full")
	// ErrStopped: the Notifier is stopped; Enqueue refuses and queued mail is dropped.
	ErrStopped = errors.New("notify: notifier stopped")
	// ErrNoRecipients: no address is configured for the approval's role.
	ErrNoRecipients = errors.New("notify: no recipients for the approval's role")
)

// approvalEmails counts mails by outcome: delivered, failed (gave up), dropped (stopped).
var approvalEmails = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slipway_manager_approval_emails_total",
	Help: "Mails about pending approvals, by result: delivered, failed (retries exhausted or a permanent error), dropped (stopped).",
}, []string{"result"})

func init() { telemetry.MustRegister(approvalEmails) }

// Notifier mails each enqueued pending approval to the people who decide it.
type Notifier struct {
	cfg   Config
	log   *slog.Logger
	queue chan Pending

	mu      sync.Mutex
	queued  map[string]bool // approval ids in the queue, so a repeated Enqueue sends once
	stopped bool
	cancel  context.CancelFunc
	started chan struct{}
	wg      sync.WaitGroup
}

// New checks cfg and returns a Notifier; Start begins sending.
func New(cfg Config) (*Notifier, error) {
	if cfg.Sender == nil {
		return nil, errors.New("notify: no Sender")
	}
	if _, err := LinksFor(cfg.BaseURL, Pending{}); err != nil {
		return nil, err
	}
	for role, addrs := range cfg.Recipients {
		for _, a := range addrs {
			if _, err := mail.ParseAddress(a); err != nil {
				return nil, invalid.Field("notify.recipients", "%q (for %s) is not a mail address", a, role)
			}
		}
	}
	cfg.Backoff = cfg.Backoff.withDefaults()
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1000
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{cfg: cfg, log: log, queue: make(chan Pending, cfg.QueueSize), queued: map[string]bool{}}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Enqueue queues a mail about p without blocking: a running Notifier sends it at once. An
// approval already in the queue is not queued twice. It fails when the queue is full or the
// Notifier is stopped.
func (n *Notifier) Enqueue(p Pending) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return ErrStopped
	}
	if p.ApprovalID != "" && n.queued[p.ApprovalID] {
		return nil
	}
	select {
	case n.queue <- p:
		if p.ApprovalID != "" {
			n.queued[p.ApprovalID] = true
		}
		return nil
	default:
		return fmt.Errorf("%w (%d approvals waiting)", ErrQueueFull, n.cfg.QueueSize)
	}
}

// Start runs the workers until Stop or ctx ends. Starting twice is an error.
func (n *Notifier) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cancel != nil {
		return errors.New("notify: the notifier is already running")
	}
	if n.stopped {
		return ErrStopped
	}
	ctx, n.cancel = context.WithCancel(ctx)
	n.started = make(chan struct{})
	for range n.cfg.Workers {
		n.wg.Go(func() { n.work(ctx) })
	}
	close(n.started)
	n.log.InfoContext(ctx, "notify: Approval mail started", "workers", n.cfg.Workers, "queueSize", n.cfg.QueueSize)
	return nil
}

// Started is closed once the workers run (nil before Start).
func (n *Notifier) Started() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started
}

// Stop ends the workers, abandoning sends in flight, and reports what was still queued as
// dropped (Result.Err ErrStopped). Safe without Start and more than once.
func (n *Notifier) Stop() {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.stopped = true
	cancel := n.cancel
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	n.wg.Wait()
	for {
		select {
		case p := <-n.queue:
			n.finish(context.Background(), Result{Pending: p, Err: ErrStopped})
		default:
			return
		}
	}
}

func (n *Notifier) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-n.queue:
			n.mu.Lock()
			delete(n.queued, p.ApprovalID)
			n.mu.Unlock()
			n.finish(ctx, n.deliver(ctx, p))
		}
	}
}

// recipients are the addresses for p's role and those for every role, each once.
func (n *Notifier) recipients(p Pending) []string {
	to := slices.Concat(n.cfg.Recipients[p.RequiredRole], n.cfg.Recipients["*"])
	slices.Sort(to)
	return slices.Compact(to)
}

// logContext is ctx whose log lines are those of p's deployment: the design's log fields, with
// the deployment's requester as userId.
func logContext(ctx context.Context, p Pending) context.Context {
	return telemetry.WithDeployment(ctx, telemetry.Deployment{ID: p.DeploymentID, Operator: p.Operator,
		Version: p.Version, UserID: p.RequestedBy})
}

// deliver sends p's mail, retrying transient failures with backoff.
func (n *Notifier) deliver(ctx context.Context, p Pending) Result {
	ctx = logContext(ctx, p)
	res := Result{Pending: p, To: n.recipients(p)}
	if len(res.To) == 0 {
		res.Err = fmt.Errorf("%w %s", ErrNoRecipients, p.RequiredRole)
		return res
	}
	msg, err := PendingMessage(p, n.cfg.BaseURL, res.To, n.cfg.Now())
	if err != nil {
		res.Err = err
		return res
	}
	for {
		res.Attempts++
		res.Err = n.cfg.Sender.Send(ctx, msg)
		if res.Err == nil || Permanent(res.Err) || res.Attempts >= n.cfg.Backoff.Attempts {
			return res
		}
		if ctx.Err() != nil {
			res.Err = fmt.Errorf("%w: %w", ErrStopped, res.Err)
			return res
		}
		wait := n.cfg.Backoff.Delay(res.Attempts)
		n.log.WarnContext(ctx, "notify: Approval mail failed; retrying", "approval", p.ApprovalID,
			"attempt", res.Attempts, "retryIn", wait, "err", res.Err)
		if err := n.cfg.Sleep(ctx, wait); err != nil {
			res.Err = fmt.Errorf("%w: %w", ErrStopped, res.Err)
			return res
		}
	}
}

// finish logs, counts and reports a result.
func (n *Notifier) finish(ctx context.Context, r Result) {
	ctx = logContext(context.WithoutCancel(ctx), r.Pending)
	switch {
	case r.Err == nil:
		approvalEmails.WithLabelValues("delivered").Inc()
		n.log.InfoContext(ctx, "notify: Approval mail sent", "approval", r.Pending.ApprovalID,
			"recipients", len(r.To), "attempts", r.Attempts)
	case errors.Is(r.Err, ErrStopped):
		approvalEmails.WithLabelValues("dropped").Inc()
		n.log.WarnContext(ctx, "notify: Approval mail not sent: stopping", "approval", r.Pending.ApprovalID,
			"attempts", r.Attempts)
	default:
		approvalEmails.WithLabelValues("failed").Inc()
		n.log.ErrorContext(ctx, "notify: Approval mail failed; giving up", "approval", r.Pending.ApprovalID,
			"attempts", r.Attempts, "permanent", Permanent(r.Err), "err", r.Err)
	}
	if n.cfg.OnResult != nil {
		n.cfg.OnResult(r)
	}
}
