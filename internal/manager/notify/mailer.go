package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// DefaultTimeout bounds one submission, from connecting to the server's answer to the message.
const DefaultTimeout = 30 * time.Second

// Mailer submits mail to one SMTP server. It always upgrades the connection with STARTTLS (a
// server that does not offer it is refused: no credentials or mail travel in clear) and, when
// Username is set, authenticates with AUTH PLAIN.
type Mailer struct {
	// Addr is the server's host:port, usually the submission port 587.
	Addr string
	// From is the sender, "Slipway <slipway@example.com>" or a bare address: the header From
	// and the envelope's MAIL FROM.
	From string
	// Username and Password authenticate (AUTH PLAIN, after STARTTLS); empty Username: none.
	Username string
	Password string
	// TLS configures STARTTLS. nil: the system's roots; an empty ServerName is Addr's host.
	TLS *tls.Config
	// Timeout bounds one Send (0: DefaultTimeout); ctx may end it sooner.
	Timeout time.Duration
}

// Message is one mail: plain text, UTF-8, sent quoted-printable.
type Message struct {
	To      []string
	Subject string
	Body    string
	// Headers are extra header fields (X-Slipway-Approval-Id, …).
	Headers map[string]string
	// Date is the Date header (zero: now).
	Date time.Time
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err} }

// Permanent reports whether err, from Send, will fail again on retry: the server refused with a
// 5xx code (wrong password, unknown recipient), offers no STARTTLS or no AUTH PLAIN, its
// certificate does not verify, or the message or configuration is invalid. Anything else (the
// server is down, slow, or answered 4xx) is worth retrying.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var smtpErr *smtp.SMTPError
	if errors.As(err, &smtpErr) {
		return smtpErr.Code >= 500
	}
	var (
		perm      *permanentError
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		cert      x509.CertificateInvalidError
	)
	if _, ok := invalid.As(err); ok {
		return true
	}
	return errors.As(err, &perm) || errors.As(err, &verify) || errors.As(err, &authority) ||
		errors.As(err, &host) || errors.As(err, &cert)
}

// Send submits msg: connect, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA, QUIT. One attempt; the
// Notifier retries. Errors name the step that failed and never hold the password.
func (m *Mailer) Send(ctx context.Context, msg Message) (err error) {
	ctx, span := telemetry.Tracer().Start(ctx, "smtp.send")
	span.SetAttributes(attribute.String("smtp.server", m.Addr), attribute.Int("smtp.recipients", len(msg.To)))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()

	from, to, data, err := m.compose(msg)
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return invalid.Field("smtp.addr", "%q is not host:port", m.Addr)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if m.TLS != nil {
		cfg = m.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("notify: connect to %s: %w", m.Addr, err)
	}
	// The deadline bounds every read and write; closing on ctx's end unblocks them at once.
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	c, err := smtp.NewClientStartTLS(conn, cfg)
	if err != nil {
		_ = conn.Close()
		if strings.Contains(err.Error(), "support STARTTLS") {
			return permanent(fmt.Errorf("notify: %s offers no STARTTLS; refusing to send in clear", m.Addr))
		}
		return fmt.Errorf("notify: STARTTLS with %s: %w", m.Addr, ctxErr(ctx, err))
	}
	defer c.Close()
	c.CommandTimeout, c.SubmissionTimeout = timeout, timeout

	if m.Username != "" {
		if !c.SupportsAuth(sasl.Plain) {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("notify: TLS with %s: %w", m.Addr, err)
			}
			// SupportsAuth hides the error of the TLS handshake and greeting: Noop shows it.
			if err := c.Noop(); err != nil {
				return fmt.Errorf("notify: TLS with %s: %w", m.Addr, err)
			}
			return permanent(fmt.Errorf("notify: %s offers no AUTH PLAIN after STARTTLS", m.Addr))
		}
		if err := c.Auth(sasl.NewPlainClient("", m.Username, m.Password)); err != nil {
			return fmt.Errorf("notify: authenticate to %s as %s: %w", m.Addr, m.Username, ctxErr(ctx, err))
		}
	}
	if err := c.SendMail(from, to, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("notify: send to %s: %w", m.Addr, ctxErr(ctx, err))
	}
	// The server has taken the message; a failed QUIT does not undo that.
	_ = c.Quit()
	return nil
}

// ctxErr prefers ctx's error (a timeout) to the closed-connection error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// compose checks msg and renders it: the envelope's sender and recipients and the RFC 5322 text.
func (m *Mailer) compose(msg Message) (from string, to []string, data []byte, err error) {
	sender, err := mail.ParseAddress(m.From)
	if err != nil {
		return "", nil, nil, invalid.Field("smtp.from", "%q is not a mail address: %v", m.From, err)
	}
	if len(msg.To) == 0 {
		return "", nil, nil, invalid.Field("to", "no recipient")
	}
	var heads []string
	for _, a := range msg.To {
		addr, err := mail.ParseAddress(a)
		if err != nil {
			return "", nil, nil, invalid.Field("to", "%q is not a mail address: %v", a, err)
		}
		to = append(to, addr.Address)
		heads = append(heads, addr.String())
	}
	date := msg.Date
	if date.IsZero() {
		date = time.Now()
	}
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", sender.String())
	header("To", strings.Join(heads, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", oneLine(msg.Subject)))
	header("Date", date.Format(time.RFC1123Z))
	header("Message-ID", messageID(sender.Address))
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header("Auto-Submitted", "auto-generated")
	keys := make([]string, 0, len(msg.Headers))
	for k := range msg.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, ": \r\n") {
			return "", nil, nil, invalid.Field("headers", "%q is not a header name", k)
		}
		header(k, mime.QEncoding.Encode("utf-8", oneLine(msg.Headers[k])))
	}
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	body := strings.ReplaceAll(strings.ReplaceAll(msg.Body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := qp.Write([]byte(body)); err != nil {
		return "", nil, nil, err
	}
	if err := qp.Close(); err != nil {
		return "", nil, nil, err
	}
	return sender.Address, to, b.Bytes(), nil
}

// oneLine keeps a header value on one line: no header can be smuggled in through a subject.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// messageID is a unique Message-ID at the sender's domain.
func messageID(sender string) string {
	domain := "slipway.invalid"
	if _, d, ok := strings.Cut(sender, "@"); ok && d != "" {
		domain = d
	}
	return "<" + strings.ToLower(rand.Text()) + "@" + domain + ">"
}
