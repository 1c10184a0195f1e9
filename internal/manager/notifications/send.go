package notifications

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// maxAnswer is how much of a receiver's answer is read (and kept, in part, in the last error).
const maxAnswer = 4 << 10

// newHTTPClient is the webhook client: redirects are not followed (a redirect could carry the
// body elsewhere), TLS 1.2 or newer, each attempt bounded by its context.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: DefaultPerChannel,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// permanentError is a failure retrying cannot fix: the delivery fails at once.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p) || notify.Permanent(err)
}

// send makes one attempt to deliver n through its channel.
func (s *Service) send(ctx context.Context, n *store.Notification) error {
	c, err := s.store.NotificationChannelGetByID(ctx, n.ChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return permanentError{errors.New("the channel was deleted")}
	}
	if err != nil {
		return err
	}
	sec, err := s.open(c)
	if err != nil {
		return err
	}
	switch c.Kind {
	case KindWebhook:
		return s.postWebhook(ctx, n, sec)
	case KindSlack:
		body, err := slackMessage(n)
		if err != nil {
			return permanentError{err}
		}
		return s.post(ctx, n, sec, body, nil)
	case KindSMTP:
		return s.mail(ctx, n, c)
	}
	return permanentError{fmt.Errorf("channel %s has an unknown kind %q", c.Name, c.Kind)}
}

// postWebhook posts the payload as it is, signed for this attempt.
func (s *Service) postWebhook(ctx context.Context, n *store.Notification, sec secrets) error {
	at := s.now()
	return s.post(ctx, n, sec, n.Payload, map[string]string{
		HeaderTimestamp: strconv.FormatInt(at.Unix(), 10),
		HeaderSignature: Sign([]byte(sec.Secret), at, n.Payload),
	})
}

// post sends body to the channel's URL; a 2xx answer is a delivery. Errors name the endpoint
// (scheme and host) and never the URL or the secret.
func (s *Service) post(ctx context.Context, n *store.Notification, sec secrets, body []byte, extra map[string]string) error {
	where := "POST " + endpoint(sec.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sec.URL, bytes.NewReader(body))
	if err != nil {
		return permanentError{fmt.Errorf("%s: the URL does not make a request", where)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "slipway-manager")
	req.Header.Set(HeaderDelivery, n.ID)
	req.Header.Set(HeaderEvent, n.Kind)
	req.Header.Set(HeaderAttempt, strconv.Itoa(n.Attempts))
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s", where, scrub(transportError(ctx, err, s.cfg.Timeout), sec))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	msg := fmt.Sprintf("%s: %s", where, resp.Status)
	if text := oneLine(string(answer), 200); text != "" {
		msg += ": " + text
	}
	return errors.New(scrub(msg, sec))
}

// transportError says why no answer came, without the request's URL.
func transportError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// scrub replaces every secret part of a channel's settings in s.
func scrub(s string, sec secrets) string {
	parts := []string{sec.URL, sec.Secret}
	if u, err := url.Parse(sec.URL); err == nil {
		parts = append(parts, u.RawQuery, u.EscapedPath(), u.Path, u.User.String())
		if p, ok := u.User.Password(); ok {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if len(p) > 1 {
			s = strings.ReplaceAll(s, p, "…")
		}
	}
	return s
}

// oneLine is text on one line, at most n bytes.
func oneLine(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > n {
		text = text[:n] + "…"
	}
	return text
}

// payloadOf decodes a stored payload.
func payloadOf(n *store.Notification) (Payload, error) {
	var p Payload
	err := json.Unmarshal(n.Payload, &p)
	return p, err
}
