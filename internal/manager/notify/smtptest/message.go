package smtptest

import (
	"bytes"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"
)

// Wait is how long Receive and Await wait for a message.
const Wait = 30 * time.Second

// Message is one message the server accepted: its envelope, how it came, and its content.
type Message struct {
	From string   // the envelope sender (MAIL FROM)
	To   []string // the envelope recipients (RCPT TO), in order
	User string   // who authenticated; "" on a server with Options.NoAuth
	TLS  bool     // whether it came over STARTTLS

	Data   []byte      // the message as sent
	Header mail.Header // its headers, as sent (encoded words not decoded)
	// Body is the body, decoded from quoted-printable where Content-Transfer-Encoding says
	// so, with CRLF line ends as LF.
	Body string
}

func (r received) message(t testing.TB) Message {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(r.data))
	if err != nil {
		t.Fatalf("smtptest: an unreadable message: %v\n%s", err, r.data)
	}
	body := m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(m.Body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("smtptest: reading the body: %v\n%s", err, r.data)
	}
	return Message{
		From: r.from, To: r.to, User: r.user, TLS: r.tls, Data: r.data,
		Header: m.Header, Body: strings.ReplaceAll(string(b), "\r\n", "\n"),
	}
}

// Receive is the next message the server accepts; the test fails if none comes within Wait.
func (s *Server) Receive(t testing.TB) Message {
	t.Helper()
	return s.Await(t, "message", nil)
}

// Await is the next accepted message that match accepts (any with a nil match), passing over
// (and logging) others; the test fails if none comes within Wait. what names the message
// for that failure.
func (s *Server) Await(t testing.TB, what string, match func(Message) bool) Message {
	t.Helper()
	timeout := time.After(Wait)
	for {
		select {
		case r := <-s.got:
			m := r.message(t)
			if match == nil || match(m) {
				return m
			}
			t.Logf("smtptest: passing over a message that is not the %s: Subject %q", what, m.Header.Get("Subject"))
		case <-timeout:
			t.Fatalf("smtptest: the server at %s received no %s within %s", s.Addr, what, Wait)
		}
	}
}

// Poll is a message the server has accepted and no one has read yet, without waiting: for a
// test that checks nothing more was sent.
func (s *Server) Poll(t testing.TB) (Message, bool) {
	t.Helper()
	select {
	case r := <-s.got:
		return r.message(t), true
	default:
		return Message{}, false
	}
}
