package app

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// notificationOptions are the delivery worker's flags (channels are configured through the API).
type notificationOptions struct {
	timeout     time.Duration
	retryFor    time.Duration
	maxAttempts int
	perChannel  int
}

func (o *notificationOptions) bind(fs *flag.FlagSet) {
	fs.DurationVar(&o.timeout, "notification-timeout", notifications.DefaultTimeout,
		"the longest one notification delivery attempt may take (connect, send, the receiver's answer); a replica that dies mid-delivery is replaced after 3 times this")
	fs.DurationVar(&o.retryFor, "notification-retry-for", notifications.DefaultRetryFor,
		"how long a notification that cannot be delivered is retried (backoff 1s doubling to 10m) before it is marked failed")
	fs.IntVar(&o.maxAttempts, "notification-max-attempts", 0,
		"delivery attempts after which a notification is marked failed (0: no limit but --notification-retry-for)")
	fs.IntVar(&o.perChannel, "notification-max-per-channel", notifications.DefaultPerChannel,
		"deliveries in flight to one channel at once (a receiver that hangs holds no more than this)")
}

// service is the notifications service the flags describe: smtp channels through mailer (nil
// without --smtp-address), links under publicURL, claims under replicaID.
func (o *notificationOptions) service(st store.Store, keys *clusters.Keyring, mailer *notify.Mailer, publicURL, replicaID string,
	log *slog.Logger) (*notifications.Service, error) {
	if o.timeout <= 0 || o.retryFor <= 0 || o.maxAttempts < 0 || o.perChannel <= 0 {
		return nil, fmt.Errorf("--notification-timeout (%s), --notification-retry-for (%s) and --notification-max-per-channel (%d) must be positive, --notification-max-attempts (%d) not negative",
			o.timeout, o.retryFor, o.perChannel, o.maxAttempts)
	}
	cfg := notifications.Config{Store: st, Sealer: keys, PublicURL: publicURL, Logger: log, ReplicaID: replicaID,
		Timeout: o.timeout, RetryFor: o.retryFor, MaxAttempts: o.maxAttempts, PerChannel: o.perChannel}
	if mailer != nil {
		cfg.Mailer = mailer // a nil *Mailer in the interface would not read as "no mailer"
	}
	return notifications.New(cfg)
}

// defaultReplicaID is a replica's name when --replica-id is not given: the host name and a
// random suffix (the engine's and the notification worker's claims use the same).
func defaultReplicaID() string {
	host, _ := os.Hostname()
	return host + "-" + uuid.NewString()[:8]
}

// notificationService is the notifications service of serve: smtp channels through the
// --smtp-* server, links under --public-url, claims under the replica's name (given to the
// engine too).
func (o *serveOptions) notificationService(st store.Store, keys *clusters.Keyring, log *slog.Logger) (*notifications.Service, error) {
	if o.rollout.replicaID == "" {
		o.rollout.replicaID = defaultReplicaID()
	}
	var mailer *notify.Mailer
	if o.rollout.smtpAddress != "" {
		m, err := o.rollout.mailer()
		if err != nil {
			return nil, err
		}
		mailer = m
	}
	return o.notifications.service(st, keys, mailer, o.rollout.publicURL, o.rollout.replicaID, log)
}
