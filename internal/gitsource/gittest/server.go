package gittest

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// Server serves the repositories under one directory over smart HTTP.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>; a repository is at URL + "/" + name.
	URL string

	root     string
	ownsRoot bool
	listener net.Listener
	http     *http.Server
	requests atomic.Int64
	opts     options
}

type options struct {
	user, password    string
	allowReachableSHA bool
	log               io.Writer
	addr              string
}

// Option configures a Server.
type Option func(*options)

// WithBasicAuth requires HTTP basic auth with this user and password for every request.
func WithBasicAuth(user, password string) Option {
	return func(o *options) { o.user, o.password = user, password }
}

// WithAllowReachableSHA1InWant lets clients fetch any commit reachable from a ref by its hash,
// as GitHub and GitLab do. Without it, git's default, only ref tips can be asked for.
func WithAllowReachableSHA1InWant() Option {
	return func(o *options) { o.allowReachableSHA = true }
}

// WithAddr serves on addr (host:port) instead of a free port on 127.0.0.1.
func WithAddr(addr string) Option {
	return func(o *options) { o.addr = addr }
}

// WithLog sends git http-backend's messages (refusals such as "not our ref", missing
// repositories) to w. They are discarded by default.
func WithLog(w io.Writer) Option {
	return func(o *options) { o.log = w }
}

// NewServer starts a server with its repositories in a temporary directory, and stops it and
// removes them when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Start("", opts...)
	if err != nil {
		t.Fatalf("starting the git server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stopping the git server: %v", err)
		}
	})
	return s
}

// Start serves the repositories under root (a new temporary directory when root is empty) on
// 127.0.0.1 on a free port (see WithAddr). Close stops it.
func Start(root string, opts ...Option) (*Server, error) {
	s := &Server{root: root}
	for _, o := range opts {
		o(&s.opts)
	}
	backend, err := httpBackend()
	if err != nil {
		return nil, err
	}
	if s.root == "" {
		if s.root, err = os.MkdirTemp("", "gittest-"); err != nil {
			return nil, err
		}
		s.ownsRoot = true
	}
	if s.root, err = filepath.Abs(s.root); err != nil {
		return nil, err
	}
	addr := s.opts.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.listener, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.URL = "http://" + s.listener.Addr().String()
	env := append(gitEnv(),
		"GIT_PROJECT_ROOT="+s.root,
		"GIT_HTTP_EXPORT_ALL=1",
	)
	if s.opts.allowReachableSHA {
		env = append(env, "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=uploadpack.allowReachableSHA1InWant", "GIT_CONFIG_VALUE_0=true")
	}
	logw := s.opts.log
	if logw == nil {
		logw = io.Discard
	}
	var h http.Handler = &cgi.Handler{
		Path: backend, Root: "/", Dir: s.root, Env: env, InheritEnv: []string{"PATH"},
		Stderr: logw, Logger: log.New(logw, "gittest: ", 0),
	}
	h = s.readOnly(h)
	if s.opts.user != "" || s.opts.password != "" {
		h = s.basicAuth(h)
	}
	s.http = &http.Server{Handler: s.count(h)}
	go func() { _ = s.http.Serve(s.listener) }()
	return s, nil
}

// Close stops the server and removes the repositories when Start made their directory.
func (s *Server) Close() error {
	err := s.http.Close()
	if s.ownsRoot {
		err = errors.Join(err, os.RemoveAll(s.root))
	}
	return err
}

// Root is the directory holding the repositories.
func (s *Server) Root() string { return s.root }

// Requests is the number of HTTP requests served so far, refused ones included.
func (s *Server) Requests() int64 { return s.requests.Load() }

func (s *Server) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		next.ServeHTTP(w, r)
	})
}

func (s *Server) basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if !ok ||
			subtle.ConstantTimeCompare([]byte(user), []byte(s.opts.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(password), []byte(s.opts.password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readOnly refuses pushes: the repositories change only through Repository.
func (s *Server) readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			http.Error(w, "pushing is not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NewRepository creates an empty repository with a main branch, or fails the test.
func (s *Server) NewRepository(t testing.TB, name string) *Repository {
	t.Helper()
	r, err := s.CreateRepository(name)
	if err != nil {
		t.Fatalf("creating repository %s: %v", name, err)
	}
	return r
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`)

// CreateRepository creates an empty repository with a main branch, served at URL/<name>.
// name may hold '/' for nested paths such as org/app.git.
func (s *Server) CreateRepository(name string) (*Repository, error) {
	if !repoName.MatchString(name) || strings.Contains(name, "..") {
		return nil, fmt.Errorf("invalid repository name %q", name)
	}
	dir := filepath.Join(s.root, filepath.FromSlash(name))
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("repository %s exists", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &Repository{Dir: dir, URL: s.URL + "/" + name}
	if _, err := r.git("init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, err
	}
	return r, nil
}

func httpBackend() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w (is git installed?)", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("git http-backend not found: %w", err)
	}
	return p, nil
}

// gitEnv isolates git from the machine's and the user's configuration.
func gitEnv() []string {
	return []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"HOME=" + os.TempDir(),
		"GIT_TERMINAL_PROMPT=0",
	}
}

func runGit(dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), gitEnv()...), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
