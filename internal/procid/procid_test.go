package procid

import (
	"bufio"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSleep starts `sleep 600`, killed and reaped when the test ends.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestParse_RoundTripsAndRefusesABarePID(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(self.String() + "\n")
	if err != nil || got != self {
		t.Fatalf("Parse(%q) = %v, %v; want %v", self.String(), got, err, self)
	}
	for _, bad := range []string{"", "1234", "1234\n", "x 1 b", "12 x b", "-3 1 b", "1 2 3 4"} {
		if id, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, id)
		}
	}
}

func TestParseStartTime_CommandNameWithSpacesAndParentheses(t *testing.T) {
	stat := []byte("4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100")
	got, err := parseStartTime(stat)
	if err != nil || got != 987654 {
		t.Fatalf("parseStartTime = %d, %v; want 987654", got, err)
	}
}

// A pid file naming a live process that started at another time (its PID was reused), or in
// another boot, opens nothing, so nothing can be sent to it.
func TestOpen_AnotherProcessWithThePIDIsGone(t *testing.T) {
	cmd := startSleep(t)
	id, err := Of(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(id)
	if err != nil {
		t.Fatalf("Open(%v) of the live process: %v", id, err)
	}
	p.Close()
	if !id.Alive() {
		t.Fatalf("%v not alive", id)
	}
	for name, stale := range map[string]Identity{
		"earlier start": {PID: id.PID, Start: id.Start - 1, Boot: id.Boot},
		"later start":   {PID: id.PID, Start: id.Start + 1, Boot: id.Boot},
		"earlier boot":  {PID: id.PID, Start: id.Start, Boot: "00000000-0000-0000-0000-000000000000"},
	} {
		if p, err := Open(stale); !errors.Is(err, ErrGone) {
			if p != nil {
				p.Close()
			}
			t.Errorf("%s: Open(%v) = %v, want ErrGone", name, stale, err)
		}
		if stale.Alive() {
			t.Errorf("%s: %v reported alive", name, stale)
		}
	}
}

// Through a pidfd, the group of a reaped leader is still reached, and only it: its remaining
// members keep the group's ID from passing to another process.
func TestProcess_SignalGroupReachesTheGroupAfterItsLeaderIsReaped(t *testing.T) {
	leader := exec.Command("sh", "-c", `sleep 600 & echo $!`)
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := leader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	// Not waited yet, so the PID is still the leader's.
	lid, err := Of(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := Open(lid)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	memberPID, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	mid, err := Of(memberPID)
	if err != nil {
		t.Fatal(err)
	}
	member, err := Open(mid)
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	t.Cleanup(func() { _ = member.Signal(syscall.SIGKILL) })
	if err := leader.Wait(); err != nil {
		t.Fatal(err)
	}

	if err := lp.Signal(0); !errors.Is(err, ErrGone) {
		t.Fatalf("signal to the reaped leader: %v, want ErrGone", err)
	}
	if !lp.GroupAlive() {
		t.Fatal("the group is empty while its member sleep runs")
	}
	if err := lp.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !member.Wait(time.Minute) {
		t.Fatal("the group's member did not end on the group's SIGKILL")
	}
}

// A Child's group is signalled while the leader runs, and no longer once it has exited.
func TestChild_SignalsTheGroupOnlyBeforeTheLeaderIsReaped(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := Watch(cmd)
	if err := c.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	var exit *exec.ExitError
	if !errors.As(c.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("leader ended with %v, want SIGKILL", c.Err())
	}
	if err := c.SignalGroup(syscall.SIGKILL); !errors.Is(err, ErrGone) {
		t.Fatalf("signal after the reap: %v, want ErrGone and no signal", err)
	}
}
