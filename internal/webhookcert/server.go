package webhookcert

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// certPoll is how often Server looks for the certificate before it starts serving.
const certPoll = 500 * time.Millisecond

// Server is controller-runtime's webhook server that starts serving only once its certificate
// directory holds a key pair. controller-runtime's server reads the files when it starts and fails
// when they are missing, and on a first install they appear only after the issuer (and the kubelet,
// or the mirror) has written them. From then on its certwatcher reloads them on every change.
type Server struct {
	webhook.Server
	certFile, keyFile string
	registered        atomic.Bool
	loaded            atomic.Bool
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
	return &Server{
		Server:   webhook.NewServer(opts),
		certFile: filepath.Join(opts.CertDir, opts.CertName),
		keyFile:  filepath.Join(opts.CertDir, opts.KeyName),
	}
}

// Register serves hook at path.
func (s *Server) Register(path string, hook http.Handler) {
	s.registered.Store(true)
	s.Server.Register(path, hook)
}

// Registered reports whether any webhook was registered, that is whether the server will run.
func (s *Server) Registered() bool { return s.registered.Load() }

// Start waits for the key pair, then serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("webhook-server")
	if _, err := tls.LoadX509KeyPair(s.certFile, s.keyFile); err != nil {
		log.Info("Waiting for the webhook serving certificate", "certFile", s.certFile, "reason", err.Error())
		t := time.NewTicker(certPoll)
		defer t.Stop()
		for err != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				_, err = tls.LoadX509KeyPair(s.certFile, s.keyFile)
			}
		}
		log.Info("Found the webhook serving certificate", "certFile", s.certFile)
	}
	s.loaded.Store(true)
	return s.Server.Start(ctx)
}

// StartedChecker fails until the certificate is in place and the server answers TLS handshakes.
func (s *Server) StartedChecker() healthz.Checker {
	started := s.Server.StartedChecker()
	return func(req *http.Request) error {
		if !s.loaded.Load() {
			return fmt.Errorf("waiting for the webhook serving certificate %s", s.certFile)
		}
		return started(req)
	}
}
