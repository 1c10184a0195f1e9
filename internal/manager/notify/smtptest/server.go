package smtptest

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// The account the server accepts, unless Options.Password says otherwise.
const (
	User     = "slipway"
	Password = "s3cret-pass"
)

// Options shape a Server; the zero value is the usual server (STARTTLS, AUTH PLAIN as User with
// Password, a free port).
type Options struct {
	Addr     string // where to listen; "" for a free port on 127.0.0.1
	NoTLS    bool   // offer no STARTTLS
	NoAuth   bool   // offer no AUTH, and take mail without it
	Password string // the password User must give; "" for Password
}

// Server is a running SMTP server.
type Server struct {
	// Addr is host:port where it listens.
	Addr string
	got  chan received
}

// Start runs an SMTP server until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	cert := testCert(t)
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Password == "" {
		o.Password = Password
	}
	ts := &Server{got: make(chan received, 16)}
	be := smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		if o.NoAuth {
			return plainSession{&session{conn: c, srv: ts, authed: true}}, nil
		}
		return &session{conn: c, srv: ts, password: o.Password}, nil
	})
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	s.ErrorLog = log.New(io.Discard, "", 0) // clients the tests hang up on are not news
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	if !o.NoTLS {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ts.Addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return ts
}
