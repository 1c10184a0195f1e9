package notifications

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Channel kinds.
const (
	KindWebhook = "webhook"
	KindSlack   = "slack"
	KindSMTP    = "smtp"
)

// ChannelKinds are the kinds of channel.
var ChannelKinds = []string{KindWebhook, KindSlack, KindSMTP}

// Limits of a channel's settings.
const (
	minSecret     = 16
	maxSecret     = 512
	maxURL        = 2048
	maxRoutes     = 20
	maxRecipients = 50
)

// secrets are what a channel seals: its URL and (a webhook's) HMAC secret.
type secrets struct {
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// settings is a channel's checked configuration: what is shown (config) and what is sealed.
type settings struct {
	kind    string
	config  json.RawMessage
	secrets secrets
	routes  []store.NotificationRoute
}

// checkName checks a channel name: a DNS-1123 label.
func checkName(name string) error {
	if name == "" {
		return &invalid.Error{Field: "name", Reason: "required", Message: "is required"}
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return invalid.Field("name", "%s", strings.Join(errs, "; "))
	}
	return nil
}

// checkURL checks a webhook URL: absolute http(s), a host, no fragment. Messages never quote it
// (it may carry a token).
func checkURL(field, raw string) error {
	if raw == "" {
		return &invalid.Error{Field: field, Reason: "required", Message: "is required"}
	}
	u, err := url.Parse(raw)
	switch {
	case len(raw) > maxURL:
		return invalid.Field(field, "at most %d characters", maxURL)
	case err != nil:
		return invalid.Field(field, "is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return invalid.Field(field, "must be an https:// (or http://) URL")
	case u.Host == "" || u.Hostname() == "":
		return invalid.Field(field, "has no host")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return invalid.Field(field, "must not have a fragment")
	}
	return nil
}

// endpoint is a URL as the API and messages show it: scheme and host, "/…" when there was more.
func endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		out += "/…"
	}
	return out
}

// checkSecret checks a webhook's HMAC secret.
func checkSecret(s string) error {
	switch {
	case s == "":
		return &invalid.Error{Field: "webhook.secret", Reason: "required", Message: "is required: the receiver checks the signature with it"}
	case len(s) < minSecret || len(s) > maxSecret:
		return invalid.Field("webhook.secret", "must be %d to %d characters, not %d", minSecret, maxSecret, len(s))
	}
	return nil
}

// checkRecipients checks mail recipients and returns them as given.
func checkRecipients(to []string) error {
	if len(to) == 0 || len(to) > maxRecipients {
		return invalid.Field("smtp.to", "needs 1 to %d addresses, not %d", maxRecipients, len(to))
	}
	for i, a := range to {
		if _, err := mail.ParseAddress(a); err != nil {
			return invalid.Field(fmt.Sprintf("smtp.to[%d]", i), "%q is not a mail address", a)
		}
	}
	return nil
}

// checkRoutes turns the API's routes into the store's, naming the first bad field.
func checkRoutes(routes []api.ChannelRoute) ([]store.NotificationRoute, error) {
	if len(routes) == 0 || len(routes) > maxRoutes {
		return nil, invalid.Field("routes", "needs 1 to %d routes, not %d (a route with no kinds and no environments takes everything)", maxRoutes, len(routes))
	}
	out := make([]store.NotificationRoute, len(routes))
	for i, r := range routes {
		for j, k := range r.Kinds {
			if !slices.Contains(Kinds, k) {
				return nil, invalid.Field(fmt.Sprintf("routes[%d].kinds[%d]", i, j), "must be one of %s, not %q", strings.Join(Kinds, ", "), k)
			}
			out[i].Kinds = append(out[i].Kinds, k)
		}
		for j, e := range r.Environments {
			env := store.Environment(e)
			if !env.Valid() {
				return nil, invalid.Field(fmt.Sprintf("routes[%d].environments[%d]", i, j), "must be Dev, Staging or Production, not %q", e)
			}
			out[i].Environments = append(out[i].Environments, env)
		}
	}
	return out, nil
}

// routesOut is the store's routes as the API shows them.
func routesOut(rs []store.NotificationRoute) []api.ChannelRoute {
	out := make([]api.ChannelRoute, 0, len(rs))
	for _, r := range rs {
		v := api.ChannelRoute{Kinds: slices.Clone(r.Kinds)}
		for _, e := range r.Environments {
			v.Environments = append(v.Environments, string(e))
		}
		out = append(out, v)
	}
	return out
}

// matches reports whether any route takes an event of kind concerning envs.
func matches(routes []store.NotificationRoute, kind string, envs []store.Environment) bool {
	for _, r := range routes {
		if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, kind) {
			continue
		}
		if len(r.Environments) == 0 || slices.ContainsFunc(envs, func(e store.Environment) bool { return slices.Contains(r.Environments, e) }) {
			return true
		}
	}
	return false
}

// kindSettings checks the settings of kind (exactly that kind's object given) into what is
// shown and what is sealed.
func kindSettings(kind string, w *api.WebhookSettings, s *api.SlackSettings, m *api.SMTPSettings, mailer bool) (json.RawMessage, secrets, error) {
	if !slices.Contains(ChannelKinds, kind) {
		return nil, secrets{}, invalid.Field("kind", "must be one of %s, not %q", strings.Join(ChannelKinds, ", "), kind)
	}
	given := map[string]bool{KindWebhook: w != nil, KindSlack: s != nil, KindSMTP: m != nil}
	for _, k := range ChannelKinds {
		if given[k] != (k == kind) {
			if k == kind {
				return nil, secrets{}, &invalid.Error{Field: k, Reason: "required", Message: "is required for a " + kind + " channel"}
			}
			return nil, secrets{}, invalid.Field(k, "is not allowed on a %s channel", kind)
		}
	}
	switch kind {
	case KindWebhook:
		if err := checkURL("webhook.url", w.URL); err != nil {
			return nil, secrets{}, err
		}
		if err := checkSecret(w.Secret); err != nil {
			return nil, secrets{}, err
		}
		cfg, err := json.Marshal(api.WebhookView{Endpoint: endpoint(w.URL), SecretSet: true})
		return cfg, secrets{URL: w.URL, Secret: w.Secret}, err
	case KindSlack:
		if err := checkURL("slack.url", s.URL); err != nil {
			return nil, secrets{}, err
		}
		cfg, err := json.Marshal(api.EndpointView{Endpoint: endpoint(s.URL)})
		return cfg, secrets{URL: s.URL}, err
	}
	if !mailer {
		return nil, secrets{}, &invalid.Error{Field: "smtp", Reason: "notConfigured",
			Message: "the manager has no SMTP server: start it with --smtp-address (and --smtp-from)"}
	}
	if err := checkRecipients(m.To); err != nil {
		return nil, secrets{}, err
	}
	cfg, err := json.Marshal(api.SMTPSettings{To: m.To})
	return cfg, secrets{}, err
}

// checkRequest checks a new channel.
func checkRequest(req *api.ChannelRequest, mailer bool) (*settings, error) {
	if err := checkName(req.Name); err != nil {
		return nil, err
	}
	cfg, sec, err := kindSettings(req.Kind, req.Webhook, req.Slack, req.SMTP, mailer)
	if err != nil {
		return nil, err
	}
	routes, err := checkRoutes(req.Routes)
	if err != nil {
		return nil, err
	}
	return &settings{kind: req.Kind, config: cfg, secrets: sec, routes: routes}, nil
}

// applyPatch merges p over a stored channel's settings (cur, its secrets opened) and checks them.
func applyPatch(cur *store.NotificationChannel, sec secrets, p *api.ChannelPatch, mailer bool) (*settings, error) {
	w, s, m := p.Webhook, p.Slack, p.SMTP
	switch cur.Kind {
	case KindWebhook:
		merged := api.WebhookSettings{URL: sec.URL, Secret: sec.Secret}
		if w != nil {
			merged.URL = orElse(w.URL, merged.URL)
			merged.Secret = orElse(w.Secret, merged.Secret)
		}
		w = &merged
	case KindSlack:
		merged := api.SlackSettings{URL: sec.URL}
		if s != nil {
			merged.URL = orElse(s.URL, merged.URL)
		}
		s = &merged
	case KindSMTP:
		if m == nil {
			var stored api.SMTPSettings
			if err := json.Unmarshal(cur.Config, &stored); err != nil {
				return nil, fmt.Errorf("channel %s: stored settings: %w", cur.Name, err)
			}
			m = &stored
		}
	}
	cfg, newSec, err := kindSettings(cur.Kind, w, s, m, mailer)
	if err != nil {
		return nil, err
	}
	routes := cur.Routes
	if p.Routes != nil {
		if routes, err = checkRoutes(p.Routes); err != nil {
			return nil, err
		}
	}
	return &settings{kind: cur.Kind, config: cfg, secrets: newSec, routes: routes}, nil
}

// orElse is v unless it is empty.
func orElse(v, otherwise string) string {
	if v != "" {
		return v
	}
	return otherwise
}

// channelOut is a stored channel as the API shows it.
func channelOut(c *store.NotificationChannel) (*api.Channel, error) {
	out := &api.Channel{Name: c.Name, Kind: c.Kind, Routes: routesOut(c.Routes), CreatedBy: c.CreatedBy,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	var err error
	switch c.Kind {
	case KindWebhook:
		out.Webhook = &api.WebhookView{}
		err = json.Unmarshal(c.Config, out.Webhook)
	case KindSlack:
		out.Slack = &api.EndpointView{}
		err = json.Unmarshal(c.Config, out.Slack)
	case KindSMTP:
		out.SMTP = &api.SMTPSettings{}
		err = json.Unmarshal(c.Config, out.SMTP)
	}
	if err != nil {
		return nil, fmt.Errorf("channel %s: stored settings: %w", c.Name, err)
	}
	return out, nil
}
