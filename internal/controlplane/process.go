package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// process is one control-plane component run as a child process. The child gets SIGKILL when the
// parent dies, so a crashed test binary leaves nothing behind (see parentdeath.go). It is only
// ever signalled through its os.Process, which names that process and no other (a pidfd).
type process struct {
	name string
	path string
	args []string
	// restarts is how many times in a row the process is started again when it dies on its own
	// (a run of stableRun or longer gives them all back), after a pause that doubles from
	// firstBackoff up to maxBackoff. As a kubelet does for a control plane's static pods:
	//
	//   - kube-controller-manager exits when the API server goes away while it builds its
	//     controllers ("Error building controllers": the resource-quota controller's discovery is
	//     refused), and after 10 s of waiting for the API server at its start;
	//   - kwok v0.8.0 can crash with "concurrent map writes" while two of its controllers build
	//     their CEL environments at once (a race in its type registry).
	//
	// None of them keeps state (no leader election), so a restart is safe.
	restarts int

	out      *os.File
	done     chan struct{} // closed when the process has ended for good
	stopped  chan struct{} // closed by stop
	mu       sync.Mutex
	cmd      *exec.Cmd
	starts   int // runs so far
	stopping bool
	err      error
}

// The restart pauses, and how long a run lasts that gives the restarts back.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
	stableRun    = time.Minute
)

func (p *process) start(out *os.File) error {
	if _, err := os.Stat(p.path); err != nil {
		return fmt.Errorf("%s binary missing: run hack/controlplane.sh: %w", p.name, err)
	}
	p.out = out
	p.done = make(chan struct{})
	p.stopped = make(chan struct{})
	cmd, err := p.spawn()
	if err != nil {
		return err
	}
	go p.supervise(cmd)
	return nil
}

func (p *process) spawn() (*exec.Cmd, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, fmt.Errorf("%s is stopping", p.name)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := StartDyingWithParent(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.starts++
	return cmd, nil
}

// runs is how many times the process has been started.
func (p *process) runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// supervise waits for the process and starts it again while restarts are left and nobody stopped
// it; then it records how it ended.
func (p *process) supervise(cmd *exec.Cmd) {
	left, backoff := p.restarts, firstBackoff
	for {
		started := time.Now()
		err := cmd.Wait()
		if time.Since(started) >= stableRun {
			left, backoff = p.restarts, firstBackoff
		}
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		if again := !stopping && left > 0; again {
			left--
			_, _ = fmt.Fprintf(p.out, "\n[controlplane] %s %s exited (%v); starting it again in %s (%d restart(s) left)\n",
				time.Now().UTC().Format(time.RFC3339Nano), p.name, err, backoff, left)
			select {
			case <-p.stopped:
			case <-time.After(backoff):
				backoff = min(2*backoff, maxBackoff)
				next, serr := p.spawn()
				if serr == nil {
					cmd = next
					continue
				}
				err = serr
			}
		} else if !stopping {
			_, _ = fmt.Fprintf(p.out, "\n[controlplane] %s %s exited (%v); no restart left\n", time.Now().UTC().Format(time.RFC3339Nano), p.name, err)
		}
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
		return
	}
}

// exited reports whether the process has ended for good, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, waits up to grace, then kills. Signals go through the os.Process of the
// current run, which reaches that process or none (Go signals through a pidfd).
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	if !p.stopping && p.stopped != nil {
		close(p.stopped)
	}
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	if exited, _ := p.exited(); exited {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-p.done
		return nil
	}
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func defaultScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
