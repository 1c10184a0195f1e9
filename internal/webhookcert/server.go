package webhookcert

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// certPoll is how often Server looks at the certificate directory while it has no certificate it
// may serve.
const certPoll = 500 * time.Millisecond

// Server is controller-runtime's webhook server that starts serving only once its certificate
// directory holds a key pair. controller-runtime's server reads the files when it starts and fails
// when they are missing, and on a first install they appear only after the issuer (and the kubelet,
// or the mirror) has written them. From then on a certwatcher reloads them on every change.
//
// With the certificate management set up (Setup), the server also presents only a certificate
// that chains to the CA bundle of the Secret and of every webhook of the configurations: whatever
// is on disk (a previous control plane's certificate, an old mounted Secret) is not served, and
// the server is not ready, until the directory holds a trusted one.
type Server struct {
	webhook.Server
	certFile, keyFile string
	registered        atomic.Bool
	loaded            atomic.Bool
	// waiting is why the server has not started serving yet.
	waiting atomic.Pointer[string]

	// gated: present only trusted certificates (set by Setup). trust is the latest trust read.
	gated   atomic.Bool
	trust   atomic.Pointer[trust]
	watcher atomic.Pointer[certwatcher.CertWatcher]

	mu sync.Mutex
	// last is the last certificate found trusted: it is served while a newer one on disk is not
	// trusted yet (and is itself still trusted).
	last *tls.Certificate
	// refused is the last refusal logged, so a refusal is logged once.
	refused string
	// reread is when the server last re-read the files because the loaded pair was not trusted.
	reread time.Time
	log    logr.Logger
}

// NewServer returns a Server for opts; an empty CertDir is controller-runtime's default directory.
func NewServer(opts webhook.Options) *Server {
	if opts.CertDir == "" {
		opts.CertDir = DefaultCertDir()
	}
	if opts.CertName == "" {
		opts.CertName = KeyCert
	}
	if opts.KeyName == "" {
		opts.KeyName = KeyKey
	}
	s := &Server{
		certFile: filepath.Join(opts.CertDir, opts.CertName),
		keyFile:  filepath.Join(opts.CertDir, opts.KeyName),
		log:      ctrl.Log.WithName("webhook-server"),
	}
	// The server's certificate comes from getCertificate, which controller-runtime then uses
	// instead of a certwatcher of its own.
	opts.TLSOpts = append(slices.Clip(opts.TLSOpts), func(c *tls.Config) { c.GetCertificate = s.getCertificate })
	s.Server = webhook.NewServer(opts)
	msg := "no key pair read yet"
	s.waiting.Store(&msg)
	return s
}

// Register serves hook at path.
func (s *Server) Register(path string, hook http.Handler) {
	s.registered.Store(true)
	s.Server.Register(path, hook)
}

// Registered reports whether any webhook was registered, that is whether the server will run.
func (s *Server) Registered() bool { return s.registered.Load() }

// requireTrust makes the server present only certificates the trust read by setTrust accepts.
func (s *Server) requireTrust() { s.gated.Store(true) }

// setTrust records what the API server trusts now and checks the served certificate against it
// at once, so a refusal is logged (and the files re-read) without waiting for a handshake.
func (s *Server) setTrust(t *trust) {
	s.trust.Store(t)
	if w := s.watcher.Load(); w != nil {
		_, _ = s.certificate(w)
	}
}

// Start waits for a key pair it may serve (with Setup: one the webhook configurations trust),
// then serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("webhook-server")
	s.mu.Lock()
	s.log = log
	s.mu.Unlock()
	if err := s.servable(); err != nil {
		log.Info("Waiting for the webhook serving certificate", "certFile", s.certFile, "reason", err.Error())
		t := time.NewTicker(certPoll)
		defer t.Stop()
		last := err.Error()
		for err != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				if err = s.servable(); err != nil && err.Error() != last {
					last = err.Error()
					log.Info("Still waiting for the webhook serving certificate", "certFile", s.certFile, "reason", last)
				}
			}
		}
		log.Info("Found the webhook serving certificate", "certFile", s.certFile)
	}
	w, err := certwatcher.New(s.certFile, s.keyFile)
	if err != nil {
		return fmt.Errorf("reading the webhook serving certificate: %w", err)
	}
	s.watcher.Store(w)
	go func() {
		if err := w.Start(ctx); err != nil {
			log.Error(err, "Stopped watching the webhook serving certificate")
		}
	}()
	s.loaded.Store(true)
	return s.Server.Start(ctx)
}

// servable reads the key pair from disk and returns why it may not be served yet, or nil.
func (s *Server) servable() error {
	pair, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err == nil && s.gated.Load() {
		if err = s.trust.Load().verify(pair.Leaf); err != nil {
			err = fmt.Errorf("the certificate in %s (serial %s, issuer %q) is not trusted: %w",
				filepath.Dir(s.certFile), pair.Leaf.SerialNumber.Text(16), pair.Leaf.Issuer.CommonName, err)
		}
	}
	if err != nil {
		msg := err.Error()
		s.waiting.Store(&msg)
	}
	return err
}

// getCertificate is the TLS server's source of its certificate.
func (s *Server) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	w := s.watcher.Load()
	if w == nil {
		return nil, errors.New("the webhook serving certificate has not been loaded")
	}
	return s.certificate(w)
}

// certificate returns the certificate to present: the loaded one when it may be served, else the
// last trusted one while it is still trusted, else an error (the handshake fails: better than a
// certificate the API server rejects, and readiness says why).
func (s *Server) certificate(w *certwatcher.CertWatcher) (*tls.Certificate, error) {
	cur, _ := w.GetCertificate(nil)
	if !s.gated.Load() {
		return cur, nil
	}
	t := s.trust.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := verifyPair(t, cur)
	if err != nil && time.Since(s.reread) >= certPoll {
		// The certwatcher polls slowly; a pair refused now may have been replaced on disk already.
		s.reread = time.Now()
		if rerr := w.ReadCertificate(); rerr == nil {
			if cur, _ = w.GetCertificate(nil); cur != nil {
				err = verifyPair(t, cur)
			}
		}
	}
	if err == nil {
		s.last, s.refused = cur, ""
		return cur, nil
	}
	if s.last != nil && s.last != cur && verifyPair(t, s.last) == nil {
		return s.last, nil
	}
	err = fmt.Errorf("the webhook serving certificate in %s is not trusted: %w", filepath.Dir(s.certFile), err)
	if msg := err.Error(); msg != s.refused {
		s.refused = msg
		s.log.Info("Refused to serve the webhook serving certificate", "reason", msg)
	}
	return nil, err
}

func verifyPair(t *trust, pair *tls.Certificate) error {
	if pair == nil || pair.Leaf == nil {
		return errors.New("no key pair loaded")
	}
	return t.verify(pair.Leaf)
}

// StartedChecker fails until a certificate the server may serve is in place and the server
// answers TLS handshakes.
func (s *Server) StartedChecker() healthz.Checker {
	started := s.Server.StartedChecker()
	return func(req *http.Request) error {
		w := s.watcher.Load()
		if !s.loaded.Load() || w == nil {
			return fmt.Errorf("waiting for the webhook serving certificate %s: %s", s.certFile, *s.waiting.Load())
		}
		if _, err := s.certificate(w); err != nil {
			return err
		}
		return started(req)
	}
}
