// Package pgtest runs a throwaway PostgreSQL server for tests: one per test binary, started on
// first use (initdb + postgres on a free 127.0.0.1 port, data and socket in a temp dir, fsync off),
// with a fresh database per test.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }   // stops the server and removes its files
//	url := pgtest.NewDatabase(t)                     // postgres://…/t_…, dropped at the test's end
//
// The binaries come from the highest /usr/lib/postgresql/*/bin (Debian's `postgresql` package)
// or from $PGTEST_BIN_DIR. initdb refuses to run as root, so when the tests run as root the
// server runs as the `postgres` system user (which the package creates). A missing PostgreSQL is
// a test failure naming the package, never a skip. The postmaster runs in its own process group
// with a parent-death signal, so no postgres process outlives the test binary.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipway-dev/slipway/internal/procid"
)

// BinDirEnv overrides where initdb and postgres are found.
const BinDirEnv = "PGTEST_BIN_DIR"

// debianBinGlob is where Debian's postgresql package puts the server binaries, one dir per major version.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

var (
	mu       sync.Mutex
	instance *Instance
	startErr error
	dbSeq    atomic.Int64
)

// Instance is the running server.
type Instance struct {
	// Host and Port are where it listens (TCP on 127.0.0.1).
	Host string
	Port int
	// Dir holds the data dir, the socket dir and the server log (server.log).
	Dir string

	cmd    *exec.Cmd
	child  *procid.Child
	admin  *pgx.Conn
	adminM sync.Mutex
	exited <-chan struct{}
}

// Main runs the tests and then stops the server, if one was started, and removes its files.
func Main(m *testing.M) {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Server returns the test binary's server, starting it on first use; a server that cannot start
// fails tb (and every later caller) with the reason.
func Server(tb testing.TB) *Instance {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if instance == nil && startErr == nil {
		instance, startErr = start()
	}
	if startErr != nil {
		tb.Fatalf("pgtest: %v", startErr)
	}
	return instance
}

// NewDatabase creates an empty database on the server and returns its URL; the database is
// dropped (disconnecting what is still connected) when tb's test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	s := Server(tb)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// URL is the connection URL of database db on the server.
func (s *Instance) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable", s.Host, s.Port, db)
}

func (s *Instance) exec(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s.adminM.Lock()
	defer s.adminM.Unlock()
	_, err := s.admin.Exec(ctx, sql)
	return err
}

// Stop stops the server (fast shutdown, then SIGKILL to its process group) and removes its
// files. Main calls it; it is a no-op when no server runs.
func Stop() error {
	mu.Lock()
	defer mu.Unlock()
	if instance == nil {
		return nil
	}
	s := instance
	instance, startErr = nil, errors.New("server already stopped")
	return s.stop()
}

func (s *Instance) stop() error {
	if s.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.admin.Close(ctx)
		cancel()
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
		}
		// Whatever is left of the group (the postmaster, backends): SIGKILL, sent only while the
		// postmaster is not reaped, when the group's ID is still its PID and no one else's.
		_ = s.child.SignalGroup(syscall.SIGKILL)
		<-s.exited
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("remove %s: %w", s.Dir, err)
	}
	return nil
}

// BinDir returns the directory with initdb and postgres: $PGTEST_BIN_DIR, else the highest
// major version under /usr/lib/postgresql.
func BinDir() (string, error) {
	if d := os.Getenv(BinDirEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("%s=%s has no initdb: %w", BinDirEnv, d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	type cand struct {
		dir string
		v   int
	}
	var cs []cand
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			cs = append(cs, cand{d, v})
		}
	}
	if len(cs) == 0 {
		return "", fmt.Errorf("PostgreSQL server binaries not found in %s (nor %s set): "+
			"install the Debian package `postgresql` (15 or newer) with `make deps`", debianBinGlob, BinDirEnv)
	}
	best := slices.MaxFunc(cs, func(a, b cand) int { return a.v - b.v })
	if best.v < 15 {
		return "", fmt.Errorf("PostgreSQL %d found in %s, the manager needs 15 or newer: install the Debian package `postgresql` with `make deps`", best.v, best.dir)
	}
	return best.dir, nil
}

// runAs is the credential the server runs under: the `postgres` user when we are root.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root: need the `postgres` system user (the Debian package `postgresql` creates it; `make deps`): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func start() (*Instance, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	base := tempBase(cred)
	sweep(base)
	dir, err := os.MkdirTemp(base, "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Instance{Host: "127.0.0.1", Dir: dir}
	if err := s.init(bin, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// A free port can be taken between choosing and binding it: try a few.
	for attempt := 0; ; attempt++ {
		err = s.run(bin, cred)
		if err == nil {
			return s, nil
		}
		_ = s.stop()
		if attempt == 2 {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := s.init(bin, cred); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// ownerFile in a server's dir holds the test binary's pid, so a later run can remove the dirs
// of binaries that were killed before their cleanup (their postgres died with them).
const ownerFile = "owner.pid"

// sweep removes the server dirs under base whose owning test binary is gone.
func sweep(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "pgtest-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // being created, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// tempBase is where the temp dir goes: os.TempDir(), unless the server's user cannot reach it.
func tempBase(cred *syscall.Credential) string {
	base := os.TempDir()
	if cred == nil {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

// init runs initdb into Dir/data.
func (s *Instance) init(bin string, cred *syscall.Credential) error {
	for _, d := range []string{"data", "sock"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	if err := chownAll(s.Dir, cred); err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), "--pgdata", filepath.Join(s.Dir, "data"),
		"--username", "postgres", "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

func chownAll(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

// run starts postgres on a free port and waits until it accepts connections.
func (s *Instance) run(bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	logFile, err := os.Create(filepath.Join(s.Dir, "server.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(s.Dir, "data"),
		"-k", filepath.Join(s.Dir, "sock"),
		"-h", s.Host, "-p", strconv.Itoa(port),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning", "-c", "logging_collector=off")
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd, s.child = cmd, procid.Watch(cmd)
	s.exited = s.child.Done()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			s.admin = conn
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited at start: %s", tail(filepath.Join(s.Dir, "server.log")))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections in 60s: %v; log: %s", err, tail(filepath.Join(s.Dir, "server.log")))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
