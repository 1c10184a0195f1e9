package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"mime"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/notify/smtptest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

func mailerFor(t *testing.T, addr string) *Mailer {
	t.Helper()
	return &Mailer{
		Addr: addr, From: "Slipway <slipway@example.com>", Username: smtptest.User, Password: smtptest.Password,
		TLS: &tls.Config{RootCAs: smtptest.CertPool(t)}, Timeout: 10 * time.Second,
	}
}

func decodeHeader(t *testing.T, h mail.Header, k string) string {
	t.Helper()
	v, err := new(mime.WordDecoder).DecodeHeader(h.Get(k))
	if err != nil {
		t.Fatalf("header %s: %v", k, err)
	}
	return v
}

// receive is the next message ts accepts, checked to be quoted-printable (its Body decoded).
func receive(t *testing.T, ts *smtptest.Server) smtptest.Message {
	t.Helper()
	m := ts.Receive(t)
	if got := m.Header.Get("Content-Transfer-Encoding"); got != "quoted-printable" {
		t.Fatalf("Content-Transfer-Encoding %q", got)
	}
	return m
}

func TestSendDelivers(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{})
	m := mailerFor(t, ts.Addr)
	body := "Grüße from the manager.\n.a line that starts with a dot\n" + strings.Repeat("long ", 40) + "end\n"
	date := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	err := m.Send(context.Background(), Message{
		To:      []string{"Åsa Owner <asa@example.com>", "admin@example.com"},
		Subject: "Approval needed: widgets 2.0.0 — Production",
		Body:    body,
		Headers: map[string]string{"X-Slipway-Approval-Id": "ap-1"},
		Date:    date,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := receive(t, ts)
	if !r.TLS || r.User != smtptest.User {
		t.Errorf("delivered with TLS %v as %q, want STARTTLS and %q", r.TLS, r.User, smtptest.User)
	}
	if r.From != "slipway@example.com" || strings.Join(r.To, ",") != "asa@example.com,admin@example.com" {
		t.Errorf("envelope from %q to %v", r.From, r.To)
	}
	for k, want := range map[string]string{
		"From":                  `"Slipway" <slipway@example.com>`,
		"To":                    `Åsa Owner <asa@example.com>, <admin@example.com>`,
		"Subject":               "Approval needed: widgets 2.0.0 — Production",
		"Date":                  "Mon, 23 Nov 2026 12:00:00 +0000",
		"Content-Type":          "text/plain; charset=utf-8",
		"Mime-Version":          "1.0",
		"Auto-Submitted":        "auto-generated",
		"X-Slipway-Approval-Id": "ap-1",
	} {
		if got := decodeHeader(t, r.Header, k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if id := r.Header.Get("Message-Id"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.com>") {
		t.Errorf("Message-ID %q", id)
	}
	if r.Body != body {
		t.Errorf("body %q, want %q", r.Body, body)
	}
}

func TestSendWithoutAuth(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{NoAuth: true})
	m := mailerFor(t, ts.Addr)
	m.Username, m.Password = "", ""
	if err := m.Send(context.Background(), Message{To: []string{"a@example.com"}, Subject: "s", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, ts); !r.TLS {
		t.Error("sent without STARTTLS")
	}
}

// refused sends one message that must fail, and checks nothing arrived.
func refused(t *testing.T, ts *smtptest.Server, m *Mailer, msg Message) error {
	t.Helper()
	err := m.Send(context.Background(), msg)
	if err == nil {
		t.Fatal("sent")
	}
	if strings.Contains(err.Error(), smtptest.Password) {
		t.Errorf("the error holds the password: %v", err)
	}
	if ts != nil {
		if r, ok := ts.Poll(t); ok {
			t.Errorf("the server got %q", r.Data)
		}
	}
	return err
}

var plainMessage = Message{To: []string{"a@example.com"}, Subject: "s", Body: "b"}

func TestSendRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		server    smtptest.Options
		change    func(m *Mailer)
		msg       Message
		permanent bool
		says      string
	}{
		{name: "wrong password", server: smtptest.Options{Password: "other"}, permanent: true, says: "authenticate to"},
		{name: "no STARTTLS", server: smtptest.Options{NoTLS: true}, permanent: true, says: "offers no STARTTLS; refusing to send in clear"},
		{name: "no AUTH", server: smtptest.Options{NoAuth: true}, permanent: true, says: "offers no AUTH PLAIN"},
		{name: "untrusted certificate", change: func(m *Mailer) { m.TLS = nil }, permanent: true, says: "certificate"},
		{name: "certificate for another name", change: func(m *Mailer) { m.TLS.ServerName = "smtp.example.com" }, permanent: true, says: "certificate"},
		{name: "no recipient", msg: Message{Subject: "s"}, permanent: true, says: "no recipient"},
		{name: "bad recipient", msg: Message{To: []string{"not an address"}}, permanent: true, says: "not a mail address"},
		{name: "bad sender", change: func(m *Mailer) { m.From = "slipway" }, permanent: true, says: "smtp.from"},
		{name: "bad header name", msg: Message{To: []string{"a@example.com"}, Headers: map[string]string{"X-A: b\r\nBcc": "c"}}, permanent: true, says: "not a header name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := smtptest.Start(t, tc.server)
			m := mailerFor(t, ts.Addr)
			if tc.change != nil {
				tc.change(m)
			}
			msg := tc.msg
			if msg.To == nil && msg.Subject == "" {
				msg = plainMessage
			}
			err := refused(t, ts, m, msg)
			if Permanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q (permanent %v), want permanent %v saying %q", err, Permanent(err), tc.permanent, tc.says)
			}
		})
	}
}

func TestSendWrongPasswordIsSMTP535(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{Password: "other"})
	err := refused(t, ts, mailerFor(t, ts.Addr), plainMessage)
	var smtpErr *smtp.SMTPError
	if !errors.As(err, &smtpErr) || smtpErr.Code != 535 {
		t.Fatalf("error %v, want SMTP 535", err)
	}
}

func TestSendInvalidIsFieldError(t *testing.T) {
	err := (&Mailer{Addr: "127.0.0.1:1", From: "x"}).Send(context.Background(), plainMessage)
	if e, ok := invalid.As(err); !ok || e.Field != "smtp.from" {
		t.Fatalf("error %v, want an *invalid.Error for smtp.from", err)
	}
	err = (&Mailer{Addr: "no-port", From: "a@example.com"}).Send(context.Background(), plainMessage)
	if e, ok := invalid.As(err); !ok || e.Field != "smtp.addr" {
		t.Fatalf("error %v, want an *invalid.Error for smtp.addr", err)
	}
}

func TestSendServerDownIsTransient(t *testing.T) {
	err := refused(t, nil, mailerFor(t, testenv.FreeAddr(t)), plainMessage)
	if Permanent(err) || !strings.Contains(err.Error(), "connect to") {
		t.Fatalf("error %v (permanent %v), want a transient connect error", err, Permanent(err))
	}
}

func TestSendTimeout(t *testing.T) {
	// A server that accepts and never greets: Send must give up at its Timeout, not hang.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			held <- c
		}
	}()
	defer func() {
		select {
		case c := <-held:
			c.Close()
		default:
		}
	}()
	m := mailerFor(t, l.Addr().String())
	m.Timeout = 200 * time.Millisecond
	err = refused(t, nil, m, plainMessage)
	if Permanent(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v (permanent %v), want a transient deadline error", err, Permanent(err))
	}
}

func TestSendHeaderInjection(t *testing.T) {
	ts := smtptest.Start(t, smtptest.Options{})
	msg := Message{To: []string{"a@example.com"}, Subject: "hi\r\nBcc: eve@example.com", Body: "b",
		Headers: map[string]string{"X-Note": "x\nBcc: eve@example.com"}}
	if err := mailerFor(t, ts.Addr).Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	p := receive(t, ts)
	if bcc := p.Header.Get("Bcc"); bcc != "" {
		t.Fatalf("a Bcc header was smuggled in: %q", bcc)
	}
	if got := decodeHeader(t, p.Header, "Subject"); got != "hi Bcc: eve@example.com" {
		t.Errorf("Subject %q", got)
	}
}
