package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

func mailerFor(ts *testServer, addr string) *Mailer {
	return &Mailer{
		Addr: addr, From: "Slipway <slipway@example.com>", Username: testUser, Password: testPassword,
		TLS: &tls.Config{RootCAs: ts.pool}, Timeout: 10 * time.Second,
	}
}

// parsed is a received message read back: headers decoded, body decoded from quoted-printable.
type parsed struct {
	Header mail.Header
	Body   string
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse %q: %v", data, err)
	}
	if got := m.Header.Get("Content-Transfer-Encoding"); got != "quoted-printable" {
		t.Fatalf("Content-Transfer-Encoding %q", got)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	return parsed{Header: m.Header, Body: strings.ReplaceAll(string(body), "\r\n", "\n")}
}

func decodeHeader(t *testing.T, h mail.Header, k string) string {
	t.Helper()
	v, err := new(mime.WordDecoder).DecodeHeader(h.Get(k))
	if err != nil {
		t.Fatalf("header %s: %v", k, err)
	}
	return v
}

func receive(t *testing.T, ts *testServer) received {
	t.Helper()
	select {
	case r := <-ts.got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the server received no message")
		return received{}
	}
}

func TestSendDelivers(t *testing.T) {
	ts := startServer(t, serverOpts{})
	m := mailerFor(ts, ts.addr)
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
	if !r.TLS || r.User != testUser {
		t.Errorf("delivered with TLS %v as %q, want STARTTLS and %q", r.TLS, r.User, testUser)
	}
	if r.From != "slipway@example.com" || strings.Join(r.To, ",") != "asa@example.com,admin@example.com" {
		t.Errorf("envelope from %q to %v", r.From, r.To)
	}
	p := parse(t, r.Data)
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
		if got := decodeHeader(t, p.Header, k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if id := p.Header.Get("Message-Id"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.com>") {
		t.Errorf("Message-ID %q", id)
	}
	if p.Body != body {
		t.Errorf("body %q, want %q", p.Body, body)
	}
}

func TestSendWithoutAuth(t *testing.T) {
	ts := startServer(t, serverOpts{noAuth: true})
	m := mailerFor(ts, ts.addr)
	m.Username, m.Password = "", ""
	if err := m.Send(context.Background(), Message{To: []string{"a@example.com"}, Subject: "s", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, ts); !r.TLS {
		t.Error("sent without STARTTLS")
	}
}

// refused sends one message that must fail, and checks nothing arrived.
func refused(t *testing.T, ts *testServer, m *Mailer, msg Message) error {
	t.Helper()
	err := m.Send(context.Background(), msg)
	if err == nil {
		t.Fatal("sent")
	}
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("the error holds the password: %v", err)
	}
	if ts != nil {
		select {
		case r := <-ts.got:
			t.Errorf("the server got %q", r.Data)
		default:
		}
	}
	return err
}

var plainMessage = Message{To: []string{"a@example.com"}, Subject: "s", Body: "b"}

func TestSendRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		server    serverOpts
		change    func(m *Mailer)
		msg       Message
		permanent bool
		says      string
	}{
		{name: "wrong password", server: serverOpts{password: "other"}, permanent: true, says: "authenticate to"},
		{name: "no STARTTLS", server: serverOpts{noTLS: true}, permanent: true, says: "offers no STARTTLS; refusing to send in clear"},
		{name: "no AUTH", server: serverOpts{noAuth: true}, permanent: true, says: "offers no AUTH PLAIN"},
		{name: "untrusted certificate", change: func(m *Mailer) { m.TLS = nil }, permanent: true, says: "certificate"},
		{name: "certificate for another name", change: func(m *Mailer) { m.TLS.ServerName = "smtp.example.com" }, permanent: true, says: "certificate"},
		{name: "no recipient", msg: Message{Subject: "s"}, permanent: true, says: "no recipient"},
		{name: "bad recipient", msg: Message{To: []string{"not an address"}}, permanent: true, says: "not a mail address"},
		{name: "bad sender", change: func(m *Mailer) { m.From = "slipway" }, permanent: true, says: "smtp.from"},
		{name: "bad header name", msg: Message{To: []string{"a@example.com"}, Headers: map[string]string{"X-A: b\r\nBcc": "c"}}, permanent: true, says: "not a header name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.server)
			m := mailerFor(ts, ts.addr)
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
	ts := startServer(t, serverOpts{password: "other"})
	err := refused(t, ts, mailerFor(ts, ts.addr), plainMessage)
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
	ts := startServer(t, serverOpts{})
	err := refused(t, nil, mailerFor(ts, freeAddr(t)), plainMessage)
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
	ts := startServer(t, serverOpts{})
	m := mailerFor(ts, l.Addr().String())
	m.Timeout = 200 * time.Millisecond
	err = refused(t, nil, m, plainMessage)
	if Permanent(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v (permanent %v), want a transient deadline error", err, Permanent(err))
	}
}

func TestSendHeaderInjection(t *testing.T) {
	ts := startServer(t, serverOpts{})
	msg := Message{To: []string{"a@example.com"}, Subject: "hi\r\nBcc: eve@example.com", Body: "b",
		Headers: map[string]string{"X-Note": "x\nBcc: eve@example.com"}}
	if err := mailerFor(ts, ts.addr).Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	p := parse(t, receive(t, ts).Data)
	if bcc := p.Header.Get("Bcc"); bcc != "" {
		t.Fatalf("a Bcc header was smuggled in: %q", bcc)
	}
	if got := decodeHeader(t, p.Header, "Subject"); got != "hi Bcc: eve@example.com" {
		t.Errorf("Subject %q", got)
	}
}
