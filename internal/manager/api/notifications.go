package api

import (
	"encoding/json"
	"time"
)

// Notification channels and deliveries.

// ChannelRequest is the body of POST /api/v1/notifications/channels: a name, a kind and that
// kind's settings, and the routes.
type ChannelRequest struct {
	Name    string           `json:"name"`
	Kind    string           `json:"kind"`
	Webhook *WebhookSettings `json:"webhook,omitempty"`
	Slack   *SlackSettings   `json:"slack,omitempty"`
	SMTP    *SMTPSettings    `json:"smtp,omitempty"`
	Routes  []ChannelRoute   `json:"routes"`
}

// ChannelPatch is the body of PATCH /api/v1/notifications/channels/{name}: what is given
// replaces what is stored (a webhook's url and secret each on their own); the name and the kind
// stay.
type ChannelPatch struct {
	Webhook *WebhookSettings `json:"webhook,omitempty"`
	Slack   *SlackSettings   `json:"slack,omitempty"`
	SMTP    *SMTPSettings    `json:"smtp,omitempty"`
	Routes  []ChannelRoute   `json:"routes,omitempty"`
}

// WebhookSettings: where the JSON is POSTed, and the secret its HMAC-SHA256 signature is made with.
type WebhookSettings struct {
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// SlackSettings: a Slack (or Mattermost, Rocket.Chat…) incoming webhook URL. The URL is the
// secret: whoever has it can post.
type SlackSettings struct {
	URL string `json:"url,omitempty"`
}

// SMTPSettings: who is mailed, through the manager's SMTP server (--smtp-*).
type SMTPSettings struct {
	To []string `json:"to"`
}

// ChannelRoute selects events: kinds (empty: every kind) of environments (empty: every environment).
type ChannelRoute struct {
	Kinds        []string `json:"kinds,omitempty"`
	Environments []string `json:"environments,omitempty"`
}

// Channel is a channel as the API shows it: no secret, a URL as its scheme and host only.
type Channel struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"`
	Webhook   *WebhookView   `json:"webhook,omitempty"`
	Slack     *EndpointView  `json:"slack,omitempty"`
	SMTP      *SMTPSettings  `json:"smtp,omitempty"`
	Routes    []ChannelRoute `json:"routes"`
	CreatedBy string         `json:"createdBy"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// WebhookView is a webhook's settings without its secrets.
type WebhookView struct {
	Endpoint  string `json:"endpoint"`
	SecretSet bool   `json:"secretSet"`
}

// EndpointView is a URL without its secret parts.
type EndpointView struct {
	Endpoint string `json:"endpoint"`
}

// ChannelList is a page of notification channels.
type ChannelList struct {
	Items    []Channel `json:"items"`
	Continue string    `json:"continue,omitempty"`
}

// Notification is one delivery of a notification to a channel: its state, attempts and last
// error. Payload (what the channel is sent) is in GET /notifications/{id} only.
type Notification struct {
	ID            string          `json:"id"`
	EventID       string          `json:"eventId"`
	Channel       string          `json:"channel"`
	ChannelKind   string          `json:"channelKind"`
	Kind          string          `json:"kind"`
	Subject       string          `json:"subject"`
	Environments  []string        `json:"environments"`
	Summary       string          `json:"summary"`
	State         string          `json:"state"`
	Attempts      int             `json:"attempts"`
	LastError     string          `json:"lastError,omitempty"`
	NextAttemptAt *time.Time      `json:"nextAttemptAt,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
	DeliveredAt   *time.Time      `json:"deliveredAt,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
}

// NotificationList is a page of deliveries, newest first.
type NotificationList struct {
	Items    []Notification `json:"items"`
	Continue string         `json:"continue,omitempty"`
}
