package smtptest

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// send mails one message to addr over STARTTLS (trusting CertPool), authenticating as user.
func send(t *testing.T, addr, user, password, data string) error {
	t.Helper()
	c, err := smtp.DialStartTLS(addr, &tls.Config{RootCAs: CertPool(t), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if user != "" {
		if err := c.Auth(sasl.NewPlainClient("", user, password)); err != nil {
			return err
		}
	}
	return c.SendMail("from@example.com", []string{"a@example.com", "b@example.com"}, strings.NewReader(data))
}

// TestServerRecordsMail: a message sent over STARTTLS as User arrives with its envelope, its
// headers and its body decoded; Await passes over one that does not match; Poll finds nothing
// more; a wrong password and mail without AUTH are refused.
func TestServerRecordsMail(t *testing.T) {
	s := Start(t, Options{})
	for _, id := range []string{"1", "2"} {
		data := "Subject: s" + id + "\r\nX-Id: " + id + "\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nGr=C3=BC=C3=9Fe\r\nline two=\r\n, joined\r\n"
		if err := send(t, s.Addr, User, Password, data); err != nil {
			t.Fatal(err)
		}
	}
	m := s.Await(t, "message 2", func(m Message) bool { return m.Header.Get("X-Id") == "2" })
	if m.From != "from@example.com" || strings.Join(m.To, ",") != "a@example.com,b@example.com" || m.User != User || !m.TLS {
		t.Errorf("envelope from %q to %v as %q with TLS %v", m.From, m.To, m.User, m.TLS)
	}
	if m.Header.Get("Subject") != "s2" || m.Body != "Grüße\nline two, joined\n" {
		t.Errorf("Subject %q, body %q", m.Header.Get("Subject"), m.Body)
	}
	if extra, ok := s.Poll(t); ok {
		t.Errorf("Poll found %q after Await took the last message", extra.Data)
	}

	var smtpErr *smtp.SMTPError
	if err := send(t, s.Addr, User, "wrong", "Subject: x\r\n\r\nx\r\n"); !errors.As(err, &smtpErr) || smtpErr.Code != 535 {
		t.Errorf("a wrong password: %v, want SMTP 535", err)
	}
	if err := send(t, s.Addr, "", "", "Subject: x\r\n\r\nx\r\n"); err == nil {
		t.Error("mail without AUTH was taken")
	}
	if extra, ok := s.Poll(t); ok {
		t.Errorf("a refused message arrived: %q", extra.Data)
	}
}
