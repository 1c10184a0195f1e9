package smtptest

import (
	"errors"
	"io"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the server accepted it.
type received struct {
	from string
	to   []string
	data []byte
	user string
	tls  bool
}

type session struct {
	conn     *smtp.Conn
	srv      *Server
	password string
	authed   bool
	user     string
	msg      received
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != User || pass != s.password {
			return smtp.ErrAuthFailed
		}
		s.authed, s.user = true, user
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg = received{from: from, user: s.user}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg.to = append(s.msg.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.msg.data = b
	_, s.msg.tls = s.conn.TLSConnectionState()
	select {
	case s.srv.got <- s.msg:
		return nil
	default:
		return errors.New("smtptest: inbox full")
	}
}

func (s *session) Reset()        { s.msg = received{} }
func (s *session) Logout() error { return nil }

// plainSession is a session without the AUTH extension (it does not implement smtp.AuthSession).
type plainSession struct{ s *session }

func (p plainSession) Mail(from string, o *smtp.MailOptions) error { return p.s.Mail(from, o) }
func (p plainSession) Rcpt(to string, o *smtp.RcptOptions) error   { return p.s.Rcpt(to, o) }
func (p plainSession) Data(r io.Reader) error                      { return p.s.Data(r) }
func (p plainSession) Reset()                                      { p.s.Reset() }
func (p plainSession) Logout() error                               { return nil }
