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

// hostState is what a real node changes on the machine, as it was before the node started, so
// that Stop can put it back.
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
	// Bridge is the pods' bridge.
	Bridge string `json:"bridge"`
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

// restore puts the machine back as recordHost saw it, after containerd and the kubelet stopped.
func (h hostState) restore(dir, socket string) error {
	if h.Sysctls == nil {
		return nil // never recorded: nothing was started
	}
	var errs []error
	// Shims outlive containerd; their containers outlive them.
	errs = append(errs, killShims(socket))
	errs = append(errs, killCgroup("kubepods"))
	// Mounts: snapshots and sandbox files under dir, network namespaces, shim sockets.
	var prefixes []string
	if dir != "" {
		prefixes = append(prefixes, dir+"/")
	}
	for _, ns := range listDir("/run/netns") {
		if !slices.Contains(h.Netns, ns) {
			prefixes = append(prefixes, filepath.Join("/run/netns", ns))
		}
	}
	errs = append(errs, unmountUnder(prefixes))
	for _, ns := range listDir("/run/netns") {
		if !slices.Contains(h.Netns, ns) {
			errs = append(errs, os.Remove(filepath.Join("/run/netns", ns)))
		}
	}
	if h.Bridge != "" {
		if _, err := os.Stat("/sys/class/net/" + h.Bridge); err == nil {
			if out, err := exec.Command("ip", "link", "del", h.Bridge).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("deleting bridge %s: %w: %s", h.Bridge, err, out))
			}
		}
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
	errs = append(errs, removeCgroups("kubepods"))
	// What containerd, CNI and the kubelet created outside dir, deepest first.
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

// hostStateFile, in a real node's Dir, keeps the machine's state from before the node, so that a
// node whose process died without Stop (a crashed or killed test) can be cleaned up later.
const hostStateFile = "host.json"

func (h hostState) save(dir string) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, hostStateFile), data, 0o600)
}

// SweepRealNodes cleans up after real nodes whose process died without stopping them (their
// containerd and kubelet died with it, through the parent-death signal, but the shims, the
// containers, the network namespaces, the bridge, the iptables rules, the kernel settings and the
// mounts stayed): every slipway-node-* directory under the temporary directory that no running
// containerd or kubelet uses is put back as its host.json says and removed. StartRealNode calls it
// first. It returns the directories it cleaned.
func SweepRealNodes() ([]string, error) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "slipway-node-*"))
	var swept []string
	var errs []error
	for _, dir := range dirs {
		if len(processesMatching(func(argv []string) bool {
			base := filepath.Base(argv[0])
			return (base == "containerd" || base == "kubelet") && strings.Contains(strings.Join(argv, " "), dir)
		})) > 0 {
			continue // a live node
		}
		var h hostState
		if data, err := os.ReadFile(filepath.Join(dir, hostStateFile)); err == nil {
			if err := json.Unmarshal(data, &h); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", dir, err))
				continue
			}
		}
		socket := filepath.Join(dir, "containerd.sock")
		err := h.restore(dir, socket)
		if h.Sysctls == nil { // died before recording: its processes and mounts only
			err = errors.Join(killShims(socket), unmountUnder([]string{dir + "/"}))
		}
		errs = append(errs, err, os.RemoveAll(dir))
		swept = append(swept, dir)
	}
	return swept, errors.Join(errs...)
}
