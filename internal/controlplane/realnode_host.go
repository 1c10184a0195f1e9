package controlplane

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// hostState is what real nodes change on the machine, as it was before the first of them started,
// so that the last one to stop can put it back.
type hostState struct {
	// sysctls: ip_forward (the bridge plugin turns it on) and the ones the kubelet sets at its
	// start (vm.overcommit_memory, vm.panic_on_oom, kernel.panic, kernel.panic_on_oops,
	// kernel.keys.root_max*).
	Sysctls map[string]string `json:"sysctls"`
	// Iptables holds `iptables -t TABLE -S` (and ip6tables) lines per "iptables/TABLE".
	Iptables map[string][]string `json:"iptables"`
	// Netns are the network namespaces in /run/netns before the start.
	Netns []string `json:"netns"`
	// Created are the directories outside Dir that did not exist before the start (the kubelet
	// and containerd make some whatever their configuration says).
	Created []string `json:"created"`
}

var (
	hostSysctls = []string{"net/ipv4/ip_forward", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
		"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
	iptablesTables = []string{"filter", "nat", "mangle", "raw"}
	// Directories outside Dir that containerd (its shim sockets, /run/containerd/s), the CNI library
	// (its result cache) and the kubelet (container log links) create.
	hostDirs = []string{"/run/containerd", "/run/netns", "/var/lib/cni", "/var/log/containers", "/var/log/pods",
		"/var/lib/kubelet", "/etc/kubernetes", "/var/lib/containerd", "/opt/containerd"}
	cgroupRoot = "/sys/fs/cgroup"
)

func recordHost() (hostState, error) {
	h := hostState{Sysctls: map[string]string{}, Iptables: map[string][]string{}}
	for _, s := range hostSysctls {
		v, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			return h, err
		}
		h.Sysctls[s] = strings.TrimSpace(string(v))
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, t := range iptablesTables {
			lines, err := iptablesRules(cmd, t)
			if err != nil {
				return h, err
			}
			h.Iptables[cmd+"/"+t] = lines
		}
	}
	h.Netns = listDir("/run/netns")
	for _, d := range hostDirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			h.Created = append(h.Created, d)
		}
	}
	return h, nil
}

func iptablesRules(cmd, table string) ([]string, error) {
	out, err := exec.Command(cmd, "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -t %s -S: %w", cmd, table, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
}

func listDir(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// restoreMachine puts back what recordHost saw, once no real node runs: the network namespaces
// made since in /run/netns, the iptables rules and chains added since, the sysctls, and the
// directories that did not exist.
func (h hostState) restoreMachine() error {
	if h.Sysctls == nil {
		return nil
	}
	var errs []error
	var netns []string
	for _, ns := range listDir("/run/netns") {
		if !slices.Contains(h.Netns, ns) {
			netns = append(netns, filepath.Join("/run/netns", ns))
		}
	}
	errs = append(errs, unmountUnder(netns))
	for _, ns := range netns {
		errs = append(errs, os.Remove(ns))
	}
	errs = append(errs, h.restoreIptables())
	for _, s := range hostSysctls {
		if v, ok := h.Sysctls[s]; ok {
			if cur, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(cur)) == v {
				continue
			}
			errs = append(errs, os.WriteFile("/proc/sys/"+s, []byte(v), 0o644))
		}
	}
	// What containerd, CNI and the kubelet created outside the nodes' directories, deepest first.
	created := slices.Clone(h.Created)
	sort.Sort(sort.Reverse(sort.StringSlice(created)))
	for _, d := range created {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims serving the containerd at socket (they run with
// `-address SOCKET`).
func killShims(socket string) error {
	var errs []error
	for _, pid := range processesMatching(func(argv []string) bool {
		return len(argv) > 0 && strings.Contains(filepath.Base(argv[0]), "containerd-shim") && slices.Contains(argv, socket)
	}) {
		errs = append(errs, killPID(pid))
	}
	return errors.Join(errs...)
}

// processesMatching lists the PIDs whose command line matches.
func processesMatching(match func(argv []string) bool) []int {
	var pids []int
	for _, name := range listDir("/proc") {
		var pid int
		if _, err := fmt.Sscanf(name, "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", name, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid) // a pidfd on Linux: signals reach this process or none
	if err != nil {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %d: %w", pid, err)
	}
	return nil
}

// killCgroup kills every process left in the cgroup tree name (v1: in each hierarchy; v2: the
// unified one).
func killCgroup(name string) error {
	var errs []error
	for _, root := range cgroupDirs(name) {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				var pid int
				if _, err := fmt.Sscanf(f, "%d", &pid); err == nil {
					errs = append(errs, killPID(pid))
				}
			}
			return nil
		})
	}
	return errors.Join(errs...)
}

// cgroupDirs are the directories of the cgroup name under every hierarchy.
func cgroupDirs(name string) []string {
	var dirs []string
	if _, err := os.Stat(filepath.Join(cgroupRoot, name)); err == nil {
		dirs = append(dirs, filepath.Join(cgroupRoot, name)) // cgroup v2
	}
	for _, h := range listDir(cgroupRoot) {
		d := filepath.Join(cgroupRoot, h, name)
		if _, err := os.Stat(d); err == nil {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// removeCgroups removes the cgroup tree name, children first, waiting a little for killed
// processes to leave it.
func removeCgroups(name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, root := range cgroupDirs(name) {
			var dirs []string
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
			for _, d := range dirs {
				if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
					left = append(left, d+": "+err.Error())
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups left: %s", strings.Join(left, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unmountUnder unmounts every mount point at or under one of prefixes, deepest first.
func unmountUnder(prefixes []string) error {
	if len(prefixes) == 0 {
		return nil
	}
	var errs []error
	for range 3 { // a mount may hide another at the same point
		points := mountPoints(prefixes)
		if len(points) == 0 {
			return nil
		}
		sort.Sort(sort.Reverse(sort.StringSlice(points)))
		errs = errs[:0]
		for _, p := range points {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
			}
		}
	}
	if points := mountPoints(prefixes); len(points) > 0 {
		errs = append(errs, fmt.Errorf("mounts left: %s", strings.Join(points, ", ")))
	}
	return errors.Join(errs...)
}

// mountPoints lists the mount points at or under one of prefixes (a prefix ending in "/" matches
// what is under it only).
func mountPoints(prefixes []string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var points []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := strings.ReplaceAll(fields[4], `\040`, " ")
		for _, prefix := range prefixes {
			if p == prefix || strings.HasPrefix(p, prefix) || strings.HasPrefix(p, prefix+"/") {
				points = append(points, p)
				break
			}
		}
	}
	return points
}

// restoreIptables deletes the rules, then the chains, added since recordHost.
func (h hostState) restoreIptables() error {
	var errs []error
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, t := range iptablesTables {
			before := h.Iptables[cmd+"/"+t]
			now, err := iptablesRules(cmd, t)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			var chains []string
			for _, line := range now {
				if slices.Contains(before, line) {
					continue
				}
				args := shellFields(line)
				switch {
				case len(args) > 2 && args[0] == "-A":
					del := append([]string{"-w", "-t", t, "-D"}, args[1:]...)
					if out, err := exec.Command(cmd, del...).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s %s: %w: %s", cmd, strings.Join(del, " "), err, out))
					}
				case len(args) == 2 && args[0] == "-N":
					chains = append(chains, args[1])
				}
			}
			for _, c := range chains {
				for _, op := range []string{"-F", "-X"} {
					if out, err := exec.Command(cmd, "-w", "-t", t, op, c).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s -t %s %s %s: %w: %s", cmd, t, op, c, err, out))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// shellFields splits an `iptables -S` line into its arguments ("..." quotes, \" inside).
func shellFields(s string) []string {
	var fields []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted, in = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if in {
				fields = append(fields, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		fields = append(fields, cur.String())
	}
	return fields
}

// Real nodes may run side by side (one per test package, say). What is the machine's is shared:
// the first node to start records it (machineDir/host.json), each node registers itself
// (machineDir/node-*.json, with the process that owns it), and the last node to stop, or a sweep
// once no owner lives, puts the machine back. Changes are made under an exclusive flock of /run
// (a lock file would be something left behind).
const machineDir = "/run/slipway-real-nodes"

// nodeRecord is what the machine needs to know of a real node to clean up after it.
type nodeRecord struct {
	Dir    string `json:"dir"`
	Socket string `json:"socket"`
	Bridge string `json:"bridge"`
	// Cgroup is the kubelet's cgroupRoot, a directory in every hierarchy.
	Cgroup string `json:"cgroup"`
	// NetpolChain is the iptables chain (mangle) steering the pods' packets to the node's
	// NetworkPolicy controller.
	NetpolChain string `json:"netpolChain,omitempty"`
	// Owner is the PID of the process that started the node, OwnerStart its start time (so that
	// a reused PID is not taken for it).
	Owner      int    `json:"owner"`
	OwnerStart string `json:"ownerStart"`
}

func (r nodeRecord) file() string {
	return filepath.Join(machineDir, "node-"+filepath.Base(r.Dir)+".json")
}

// alive tells whether the process that started the node still runs.
func (r nodeRecord) alive() bool {
	return r.Owner > 0 && processStart(r.Owner) == r.OwnerStart
}

// processStart is a process's start time in clock ticks since boot ("" when it does not run).
func processStart(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(stat), ") ")
	if fields := strings.Fields(rest); ok && len(fields) > 19 {
		return fields[19] // field 22 of stat
	}
	return ""
}

func lockMachine() (unlock func(), err error) {
	f, err := os.Open("/run")
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking /run: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

func writeJSON(file string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o600)
}

func loadRecords() []nodeRecord {
	files, _ := filepath.Glob(filepath.Join(machineDir, "node-*.json"))
	var records []nodeRecord
	for _, f := range files {
		var r nodeRecord
		if data, err := os.ReadFile(f); err == nil && json.Unmarshal(data, &r) == nil && r.Dir != "" {
			records = append(records, r)
		}
	}
	return records
}

// cleanupNode removes what one node leaves once its containerd and kubelet have ended: its shims
// (they outlive containerd) and every process in its cgroups, the mounts under its directory
// (snapshots, sandbox files, network namespaces), its bridge, its cgroups, its directory.
func cleanupNode(r nodeRecord) error {
	var errs []error
	errs = append(errs, killShims(r.Socket), deleteNetpolChain(r.NetpolChain))
	if r.Cgroup != "" {
		errs = append(errs, killCgroup(r.Cgroup))
	}
	errs = append(errs, unmountUnder([]string{r.Dir + "/"}))
	if r.Bridge != "" {
		if _, err := os.Stat("/sys/class/net/" + r.Bridge); err == nil {
			if out, err := exec.Command("ip", "link", "del", r.Bridge).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("deleting bridge %s: %w: %s", r.Bridge, err, out))
			}
		}
	}
	if r.Cgroup != "" {
		errs = append(errs, removeCgroups(r.Cgroup))
	}
	errs = append(errs, os.RemoveAll(r.Dir))
	if err := os.Remove(r.file()); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// restoreIfLast puts the machine back when no real node runs any more. Called with the lock held.
func restoreIfLast() error {
	if len(loadRecords()) > 0 {
		return nil
	}
	var h hostState
	data, err := os.ReadFile(filepath.Join(machineDir, "host.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = json.Unmarshal(data, &h)
	}
	if err != nil {
		return fmt.Errorf("the machine's state before the real nodes: %w", err)
	}
	return errors.Join(h.restoreMachine(), os.RemoveAll(machineDir))
}

// SweepRealNodes cleans up after real nodes whose process died without stopping them (their
// containerd and kubelet died with it, through the parent-death signal, but the shims, the
// containers, the mounts, the bridge, the cgroups stayed), and puts the machine back (iptables,
// kernel settings, directories) when no real node runs any more. StartRealNode calls it first. It
// returns the node directories it removed.
func SweepRealNodes() ([]string, error) {
	unlock, err := lockMachine()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return sweepLocked()
}

func sweepLocked() ([]string, error) {
	var swept []string
	var errs []error
	recorded := map[string]bool{}
	for _, r := range loadRecords() {
		recorded[r.Dir] = true
		if !r.alive() {
			errs = append(errs, cleanupNode(r))
			swept = append(swept, r.Dir)
		}
	}
	// A directory without a record: its process died while starting the node.
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "slipway-node-*"))
	for _, dir := range dirs {
		if !recorded[dir] {
			errs = append(errs, cleanupNode(nodeRecord{Dir: dir, Socket: filepath.Join(dir, "containerd.sock")}))
			swept = append(swept, dir)
		}
	}
	errs = append(errs, restoreIfLast())
	return swept, errors.Join(errs...)
}

// cgroupCreate makes the cgroup name (a kubelet's cgroupRoot) in every hierarchy, with the
// parent's CPUs and memory nodes for cpuset (a new v1 cpuset has none).
func cgroupCreate(name string) error {
	roots := []string{cgroupRoot}
	for _, h := range listDir(cgroupRoot) {
		roots = append(roots, filepath.Join(cgroupRoot, h))
	}
	for _, root := range roots {
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue // not a hierarchy (v1's /sys/fs/cgroup is a tmpfs)
		}
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(root, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}
