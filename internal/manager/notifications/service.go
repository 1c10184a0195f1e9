package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Defaults of Config.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultPoll       = time.Second
	DefaultPerChannel = 4
	DefaultRetryFirst = time.Second
	DefaultRetryMax   = 10 * time.Minute
	DefaultRetryFor   = 24 * time.Hour
)

// Sealer seals and opens secrets (*clusters.Keyring).
type Sealer interface {
	Seal(plaintext, additionalData []byte) ([]byte, string, error)
	Open(ciphertext []byte, keyID string, additionalData []byte) ([]byte, error)
	Primary() string
}

// Config configures a Service. Store and Sealer are required.
type Config struct {
	Store  store.Store
	Sealer Sealer
	// Mailer sends the mail of smtp channels (the manager's --smtp-* server); nil: smtp channels
	// are refused.
	Mailer notify.Sender
	// PublicURL is the manager's URL as people reach it: payloads link to the API object under it.
	PublicURL string
	Logger    *slog.Logger
	Now       func() time.Time
	// ReplicaID names this replica in claims (default: host name and a random suffix).
	ReplicaID string
	// Timeout bounds one delivery attempt (connect, send, the receiver's answer); Lease is how
	// long a claim holds (default 3 × Timeout: another replica resends a dead one's claims after it).
	Timeout time.Duration
	Lease   time.Duration
	// Poll is how often the worker looks for due deliveries (Wake looks at once).
	Poll time.Duration
	// PerChannel bounds the deliveries in flight to one channel: a hanging receiver holds that
	// many attempts (each up to Timeout), never another channel's.
	PerChannel int
	// RetryFirst is the wait after the first failed attempt, doubling up to RetryMax; a delivery
	// is failed for good once its next attempt would come later than RetryFor after it was
	// stored, or after MaxAttempts attempts (0: no limit but RetryFor).
	RetryFirst, RetryMax time.Duration
	RetryFor             time.Duration
	MaxAttempts          int
	// HTTPClient posts webhooks (default: no redirects followed, TLS 1.2 or newer).
	HTTPClient *http.Client
}

// Service configures channels, stores notifications with their causes, and delivers them.
type Service struct {
	cfg   Config
	store store.Store
	log   *slog.Logger
	now   func() time.Time

	mu       sync.Mutex
	inflight map[string]int // deliveries in flight per channel id
	wake     chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
	wg       sync.WaitGroup
}

// New checks cfg and returns a Service; its worker runs after Start.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Sealer == nil {
		return nil, errors.New("notifications: Store and Sealer are required")
	}
	if cfg.PublicURL != "" {
		if u, err := url.Parse(cfg.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, invalid.Field("notifications.publicURL", "%q is not an http(s) URL", cfg.PublicURL)
		}
		cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ReplicaID == "" {
		host, _ := os.Hostname()
		cfg.ReplicaID = host + "-" + uuid.NewString()[:8]
	}
	cfg.Timeout = orDefault(cfg.Timeout, DefaultTimeout)
	cfg.Lease = orDefault(cfg.Lease, 3*cfg.Timeout)
	cfg.Poll = orDefault(cfg.Poll, DefaultPoll)
	cfg.RetryFirst = orDefault(cfg.RetryFirst, DefaultRetryFirst)
	cfg.RetryMax = max(orDefault(cfg.RetryMax, DefaultRetryMax), cfg.RetryFirst)
	cfg.RetryFor = orDefault(cfg.RetryFor, DefaultRetryFor)
	if cfg.PerChannel <= 0 {
		cfg.PerChannel = DefaultPerChannel
	}
	if cfg.Lease <= cfg.Timeout {
		return nil, fmt.Errorf("notifications: the lease (%s) must be longer than an attempt's timeout (%s)", cfg.Lease, cfg.Timeout)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient()
	}
	return &Service{cfg: cfg, store: cfg.Store, log: cfg.Logger, now: cfg.Now,
		inflight: map[string]int{}, wake: make(chan struct{}, 1)}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// aad binds a channel's sealed secrets to its name and id: a ciphertext moved to another
// channel's row does not open.
func aad(c *store.NotificationChannel) []byte {
	return []byte("slipway-manager/v1/notification-channel/" + c.Name + "/" + c.ID)
}

// seal seals sec for c (nothing for a channel without secrets).
func (s *Service) seal(c *store.NotificationChannel, sec secrets) error {
	if sec == (secrets{}) {
		c.SecretCiphertext, c.KeyID = nil, ""
		return nil
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	c.SecretCiphertext, c.KeyID, err = s.cfg.Sealer.Seal(plain, aad(c))
	clear(plain)
	return err
}

// open opens c's secrets.
func (s *Service) open(c *store.NotificationChannel) (secrets, error) {
	var sec secrets
	if len(c.SecretCiphertext) == 0 {
		return sec, nil
	}
	plain, err := s.cfg.Sealer.Open(c.SecretCiphertext, c.KeyID, aad(c))
	if err != nil {
		return sec, fmt.Errorf("the secrets of channel %s do not open: %w", c.Name, err)
	}
	defer clear(plain)
	if err := json.Unmarshal(plain, &sec); err != nil {
		return sec, fmt.Errorf("the secrets of channel %s: %w", c.Name, err)
	}
	return sec, nil
}

// CreateChannel checks and stores a channel; store.ErrAlreadyExists when the name is taken.
func (s *Service) CreateChannel(ctx context.Context, req *api.ChannelRequest, by string) (*api.Channel, error) {
	set, err := checkRequest(req, s.cfg.Mailer != nil)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	c := &store.NotificationChannel{ID: uuid.NewString(), Name: req.Name, Kind: set.kind, Config: set.config,
		Routes: set.routes, CreatedBy: by, CreatedAt: now, UpdatedAt: now}
	if err := s.seal(c, set.secrets); err != nil {
		return nil, err
	}
	stored, err := s.store.NotificationChannelCreate(ctx, c)
	if err != nil {
		return nil, err
	}
	return channelOut(stored)
}

// UpdateChannel applies a patch; store.ErrNotFound for an unknown channel.
func (s *Service) UpdateChannel(ctx context.Context, name string, p *api.ChannelPatch) (*api.Channel, error) {
	cur, err := s.store.NotificationChannelGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	sec, err := s.open(cur)
	if err != nil {
		return nil, err
	}
	set, err := applyPatch(cur, sec, p, s.cfg.Mailer != nil)
	if err != nil {
		return nil, err
	}
	next := *cur
	next.Config, next.Routes, next.UpdatedAt = set.config, set.routes, s.now().UTC()
	if err := s.seal(&next, set.secrets); err != nil {
		return nil, err
	}
	stored, err := s.store.NotificationChannelUpdate(ctx, &next)
	if err != nil {
		return nil, err
	}
	return channelOut(stored)
}

// DeleteChannel removes a channel; its pending deliveries fail. store.ErrNotFound when absent.
func (s *Service) DeleteChannel(ctx context.Context, name string) error {
	return s.store.NotificationChannelDelete(ctx, name, s.now().UTC())
}

// GetChannel returns a channel as the API shows it.
func (s *Service) GetChannel(ctx context.Context, name string) (*api.Channel, error) {
	c, err := s.store.NotificationChannelGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return channelOut(c)
}

// ListChannels returns a page of channels by name, after the name after.
func (s *Service) ListChannels(ctx context.Context, after string, limit int) ([]*api.Channel, error) {
	list, err := s.store.NotificationChannelList(ctx, &store.NotificationChannelListParams{After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*api.Channel, 0, len(list))
	for _, c := range list {
		v, err := channelOut(c)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// TestChannel stores a test notification for the channel named name (and wakes the worker).
func (s *Service) TestChannel(ctx context.Context, name, by string) (*store.Notification, error) {
	if _, err := s.store.NotificationChannelGetByName(ctx, name); err != nil {
		return nil, err
	}
	ev := Event{Kind: KindTest, Subject: "channel/" + name, Channel: name,
		Payload: Payload{Summary: fmt.Sprintf("test notification from slipway to channel %s, asked by %s", name, by)}}
	stored, err := s.Enqueue(ctx, s.store, ev)
	if err != nil {
		return nil, err
	}
	if len(stored) != 1 {
		return nil, fmt.Errorf("channel %s: %w", name, store.ErrNotFound)
	}
	s.Wake()
	return stored[0], nil
}

// RotateKeys re-seals every channel's secrets under the primary key and returns how many.
func (s *Service) RotateKeys(ctx context.Context) (int, error) {
	all, err := s.store.NotificationChannelListAll(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range all {
		if len(c.SecretCiphertext) == 0 || c.KeyID == s.cfg.Sealer.Primary() {
			continue
		}
		sec, err := s.open(c)
		if err == nil {
			err = s.seal(c, sec)
		}
		if err == nil {
			_, err = s.store.NotificationChannelUpdate(ctx, c)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
