package notify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The tests' SMTP server is a real one (emersion/go-smtp) on 127.0.0.1 with STARTTLS under a
// certificate made for the test, AUTH PLAIN only after STARTTLS (AllowInsecureAuth off), and
// mail only after AUTH.

const (
	testUser     = "slipway"
	testPassword = "s3cret-pass"
)

var (
	certOnce sync.Once
	certPair tls.Certificate
	certPool *x509.CertPool
	certErr  error
)

// testCert is a self-signed certificate for 127.0.0.1 and localhost, and a pool trusting it: one
// for the package, so a server restarted on the same address presents the same certificate.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	certOnce.Do(func() { certPair, certPool, certErr = makeCert() })
	if certErr != nil {
		t.Fatal(certErr)
	}
	return certPair, certPool
}

func makeCert() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "smtp test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

// received is one message the server accepted.
type received struct {
	From string
	To   []string
	Data []byte
	User string
	TLS  bool
}

type serverOpts struct {
	addr     string // "" for a free port
	noTLS    bool   // offer no STARTTLS
	noAuth   bool   // offer no AUTH
	password string // "" for testPassword
}

type testServer struct {
	addr string
	pool *x509.CertPool
	got  chan received
}

// startServer runs an SMTP server until the test ends.
func startServer(t *testing.T, o serverOpts) *testServer {
	t.Helper()
	cert, pool := testCert(t)
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	if o.password == "" {
		o.password = testPassword
	}
	ts := &testServer{pool: pool, got: make(chan received, 16)}
	be := smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		if o.noAuth {
			return plainSession{&session{conn: c, srv: ts, authed: true}}, nil
		}
		return &session{conn: c, srv: ts, password: o.password}, nil
	})
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	s.ErrorLog = log.New(io.Discard, "", 0) // clients the tests hang up on are not news
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	if !o.noTLS {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return ts
}

// freeAddr is an address where nothing listens (for now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

type session struct {
	conn     *smtp.Conn
	srv      *testServer
	password string
	authed   bool
	user     string
	msg      received
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != testUser || pass != s.password {
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
	s.msg = received{From: from, User: s.user}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg.To = append(s.msg.To, to)
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
	s.msg.Data = b
	_, s.msg.TLS = s.conn.TLSConnectionState()
	select {
	case s.srv.got <- s.msg:
		return nil
	default:
		return errors.New("test server: inbox full")
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
