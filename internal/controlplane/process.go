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
// parent dies, so a crashed test binary leaves nothing behind.
type process struct {
	name string
	path string
	args []string
	// restarts is how many times the process is started again when it dies on its own. kwok
	// v0.8.0 can crash with "concurrent map writes" while two of its controllers build their CEL
	// environments at once (a race in its type registry); it keeps no state, so a restart is safe.
	restarts int

	out      *os.File
	done     chan struct{} // closed when the process has ended for good
	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	err      error
}

func (p *process) start(out *os.File) error {
	if _, err := os.Stat(p.path); err != nil {
		return fmt.Errorf("%s binary missing: run hack/controlplane.sh: %w", p.name, err)
	}
	p.out = out
	p.done = make(chan struct{})
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd = cmd
	return cmd, nil
}

// supervise waits for the process and starts it again while restarts are left and nobody stopped
// it; then it records how it ended.
func (p *process) supervise(cmd *exec.Cmd) {
	for {
		err := cmd.Wait()
		p.mu.Lock()
		again := !p.stopping && p.restarts > 0
		if again {
			p.restarts--
		}
		p.mu.Unlock()
		if again {
			_, _ = fmt.Fprintf(p.out, "\n[controlplane] %s exited (%v); starting it again\n", p.name, err)
			next, serr := p.spawn()
			if serr == nil {
				cmd = next
				continue
			}
			err = serr
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

// stop sends SIGTERM, waits up to grace, then kills.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
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
