// Command werfcontract is the program of the WerfBundle contract test image
// (slipway.local/werf-contract-test): a stand-in for werf, installed as /usr/local/bin/werf, that
// the converge Job runs exactly as it runs the real werf image. It deploys nothing. It checks what
// `werf bundle apply` (or `werf bundle plan`) would need from the Job's pod:
//
//   - its arguments parse as werf's: the subcommand, the flags werf has (--repo, --tag, --release,
//     --namespace, --values, --docker-config, --insecure-registry, --log-color-mode, --exit-code
//     for plan), the required ones given, nothing unknown;
//   - it runs as a user other than root, with a writable HOME and temporary directory
//     (WERF_TMP_DIR, TMPDIR) whatever the root file system allows;
//   - every --values file, in the order given, exists, is readable and is a YAML mapping; a
//     --docker-config directory holds a config.json; SSL_CERT_DIR's directories under /werf exist;
//   - the ServiceAccount's token, ca.crt and namespace are mounted, the namespace is --namespace,
//     and the API server (KUBERNETES_SERVICE_HOST/PORT, verified with ca.crt) accepts the token and
//     lets it manage Secrets there (werf keeps its releases in Secrets);
//   - the bundle --repo:--tag is in the registry (plain HTTP with --insecure-registry), read with
//     the credentials --docker-config holds for the registry's host, as werf sends them.
//
// It then exits as werf does: 0 after werf-like output, or 1 with the error as the log's last line
// ("Error: ..."), naming the part of the contract that is broken. The values key
// werfContractTest.fail makes it fail on purpose, after every check passed, with that message.
//
// On success it also writes a JSON report (the checks' findings, the values as parsed) to
// /dev/termination-log, so a test reads what it saw from the pod's status. werf writes no
// termination message; on failure neither does this program, so the kubelet's
// FallbackToLogsOnError takes the log's end, as it does for werf.
package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	saDir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	// failKey in the values makes the run fail on purpose: werfContractTest: {fail: "message"}.
	failKey = "werfContractTest"
)

// Report is what a successful run found, written to the termination message as JSON.
type Report struct {
	Command        string         `json:"command"`
	Repo           string         `json:"repo"`
	Tag            string         `json:"tag"`
	Release        string         `json:"release"`
	Namespace      string         `json:"namespace"`
	UID            int            `json:"uid"`
	GID            int            `json:"gid"`
	Home           string         `json:"home"`
	TmpDir         string         `json:"tmpDir"`
	ReadOnlyRoot   bool           `json:"readOnlyRoot"`
	ValuesFiles    []string       `json:"valuesFiles"`
	ValuesSHA256   []string       `json:"valuesSHA256"`
	Values         map[string]any `json:"values"`
	ServiceAccount string         `json:"serviceAccountNamespace"`
	APIServer      string         `json:"apiServer"`
	BundleDigest   string         `json:"bundleDigest"`
	DockerConfig   string         `json:"dockerConfig"`
	RegistryURL    string         `json:"registryURL"`
	WerfEnv        []string       `json:"werfEnv"`
}

// contractError names the broken part of the contract.
type contractError struct{ part, detail string }

func (e *contractError) Error() string { return e.part + ": " + e.detail }

func broken(part, format string, args ...any) error {
	return &contractError{part: part, detail: fmt.Sprintf(format, args...)}
}

func main() {
	start := time.Now()
	fmt.Println("Version: werf-contract-test (slipway test image: checks the Job's contract, deploys nothing)")
	r, err := check(os.Args)
	if err != nil {
		fmt.Printf("└ Checking the Job's contract (%.2f seconds) FAILED\n", time.Since(start).Seconds())
		fmt.Printf("Error: werf contract test: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("└ Checking the Job's contract (%.2f seconds)\n", time.Since(start).Seconds())
	report, _ := json.Marshal(r)
	if err := os.WriteFile("/dev/termination-log", report, 0o644); err != nil {
		fmt.Printf("Error: werf contract test: writing the report to /dev/termination-log: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("Release %q in namespace %q: the Job's contract holds for bundle %s:%s (nothing was deployed)\n",
		r.Release, r.Namespace, r.Repo, r.Tag)
}

// check runs every check in turn and stops at the first broken part.
func check(argv []string) (*Report, error) {
	fmt.Println("┌ Checking the Job's contract")
	r := &Report{}
	steps := []struct {
		name string
		run  func(*Report, []string) error
	}{
		{"arguments", parseArgs},
		{"user and file system", checkUserAndFS},
		{"values files", checkValues},
		{"registry credentials and CA", checkDockerAndCA},
		{"ServiceAccount", checkServiceAccount},
		{"API server", checkAPIServer},
		{"bundle", checkBundle},
		{"failure switch", checkFailSwitch},
	}
	for _, s := range steps {
		if err := s.run(r, argv); err != nil {
			return nil, err
		}
		fmt.Printf("│ %s: ok\n", s.name)
	}
	return r, nil
}

// flags are the werf flags the Job may use; the others werf has are refused here, so a flag the
// Job adds must be added to this list from werf's reference (werf bundle apply --help).
type flags struct {
	repo, tag, release, namespace, logColor, dockerConfig string
	values                                                multi
	insecure, exitCode                                    bool
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

var parsed flags

func parseArgs(r *Report, argv []string) error {
	if len(argv) == 0 || path.Base(argv[0]) != "werf" {
		return broken("arguments", "the command is %q, want werf (found through PATH, as the werf image has it)", argv)
	}
	if len(argv) < 3 || argv[1] != "bundle" || (argv[2] != "apply" && argv[2] != "plan") {
		return broken("arguments", "want `werf bundle apply|plan [options]`, got %q", argv[1:])
	}
	r.Command = "bundle " + argv[2]
	fmt.Printf("│ werf %s\n", strings.Join(argv[1:], " "))
	fs := flag.NewFlagSet("werf "+r.Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &parsed
	fs.StringVar(&f.repo, "repo", "", "")
	fs.StringVar(&f.tag, "tag", "latest", "")
	fs.StringVar(&f.release, "release", "", "")
	fs.StringVar(&f.namespace, "namespace", "", "")
	fs.StringVar(&f.logColor, "log-color-mode", "auto", "")
	fs.StringVar(&f.dockerConfig, "docker-config", "", "")
	fs.Var(&f.values, "values", "")
	fs.BoolVar(&f.insecure, "insecure-registry", false, "")
	if argv[2] == "plan" {
		fs.BoolVar(&f.exitCode, "exit-code", false, "")
	}
	if err := fs.Parse(argv[3:]); err != nil {
		return broken("arguments", "%v", err)
	}
	if fs.NArg() > 0 {
		return broken("arguments", "werf bundle %s takes no positional arguments, got %q", argv[2], fs.Args())
	}
	switch {
	case f.repo == "" || strings.Contains(f.repo, "://") || strings.ContainsAny(path.Base(f.repo), ":@"):
		return broken("arguments", "--repo=%q: want a repository without scheme, tag or digest", f.repo)
	case f.tag == "" || f.tag == "latest":
		return broken("arguments", "--tag=%q: the Job must name the exact tag it deploys", f.tag)
	case f.release == "":
		return broken("arguments", "--release is missing")
	case f.namespace == "":
		return broken("arguments", "--namespace is missing")
	case f.logColor != "on" && f.logColor != "off" && f.logColor != "auto":
		return broken("arguments", "--log-color-mode=%q: werf supports on, off and auto", f.logColor)
	}
	r.Repo, r.Tag, r.Release, r.Namespace = f.repo, f.tag, f.release, f.namespace
	return nil
}

func checkUserAndFS(r *Report, _ []string) error {
	r.UID, r.GID = os.Getuid(), os.Getgid()
	if r.UID == 0 {
		return broken("user", "running as root: the Job must run werf as a non-root user")
	}
	home := os.Getenv("HOME")
	if !filepath.IsAbs(home) {
		return broken("HOME", "HOME=%q is not an absolute path: werf keeps ~/.werf there", home)
	}
	// werf creates ~/.werf (its --home-dir default) and lock files in it.
	if err := writable(filepath.Join(home, ".werf")); err != nil {
		return broken("HOME", "werf cannot write its home directory: %v", err)
	}
	r.Home = home
	tmp := os.Getenv("WERF_TMP_DIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	for _, dir := range []string{tmp, os.TempDir()} {
		if err := writable(dir); err != nil {
			return broken("temporary directory", "%v", err)
		}
	}
	r.TmpDir = tmp
	probe := "/.werf-contract-probe"
	err := os.WriteFile(probe, nil, 0o600)
	_ = os.Remove(probe)
	r.ReadOnlyRoot = err != nil
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "WERF_") {
			r.WerfEnv = append(r.WerfEnv, e)
		}
	}
	fmt.Printf("│ uid=%d gid=%d HOME=%s tmp=%s read-only root=%t\n", r.UID, r.GID, home, tmp, r.ReadOnlyRoot)
	return nil
}

// writable creates dir if needed and a file in it, then removes the file.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".werf-contract-*")
	if err != nil {
		return err
	}
	_ = f.Close()
	return os.Remove(f.Name())
}

func checkValues(r *Report, _ []string) error {
	r.Values = map[string]any{}
	for i, file := range parsed.values {
		data, err := os.ReadFile(file)
		if err != nil {
			return broken("values file", "--values=%s (number %d): %v", file, i+1, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return broken("values file", "--values=%s (number %d) is not a YAML mapping: %v", file, i+1, err)
		}
		sum := sha256.Sum256(data)
		r.ValuesFiles = append(r.ValuesFiles, file)
		r.ValuesSHA256 = append(r.ValuesSHA256, hex.EncodeToString(sum[:]))
		// werf merges values files in order: a later file wins (at the top level here; the
		// operator hands werf a single merged file).
		for k, v := range m {
			r.Values[k] = v
		}
		fmt.Printf("│ values %s: %d bytes, %d top-level keys\n", file, len(data), len(m))
	}
	return nil
}

func checkDockerAndCA(_ *Report, _ []string) error {
	if d := parsed.dockerConfig; d != "" {
		data, err := os.ReadFile(filepath.Join(d, "config.json"))
		if err != nil {
			return broken("docker config", "--docker-config=%s: %v", d, err)
		}
		var cfg struct{ Auths map[string]json.RawMessage }
		if err := json.Unmarshal(data, &cfg); err != nil || len(cfg.Auths) == 0 {
			return broken("docker config", "%s/config.json has no auths (%v)", d, err)
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("SSL_CERT_DIR")) {
		if !strings.HasPrefix(dir, "/werf/") {
			continue // the image's own directories
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			return broken("CA", "SSL_CERT_DIR names %s, which holds no certificate (%v)", dir, err)
		}
	}
	return nil
}

func checkServiceAccount(r *Report, _ []string) error {
	for _, name := range []string{"token", "ca.crt", "namespace"} {
		if data, err := os.ReadFile(saDir + name); err != nil || len(bytes.TrimSpace(data)) == 0 {
			return broken("ServiceAccount", "%s%s is not mounted (%v): werf authenticates with it", saDir, name, err)
		}
	}
	ns, _ := os.ReadFile(saDir + "namespace")
	r.ServiceAccount = strings.TrimSpace(string(ns))
	if r.ServiceAccount != parsed.namespace {
		return broken("ServiceAccount", "the pod runs in namespace %q but deploys into --namespace=%q", r.ServiceAccount, parsed.namespace)
	}
	return nil
}

func checkAPIServer(r *Report, _ []string) error {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return broken("API server", "KUBERNETES_SERVICE_HOST/PORT are not set: werf's in-cluster configuration needs them")
	}
	r.APIServer = net.JoinHostPort(host, port)
	ca, _ := os.ReadFile(saDir + "ca.crt")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return broken("API server", "%sca.crt holds no PEM certificate", saDir)
	}
	token, _ := os.ReadFile(saDir + "token")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	review := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",`+
		`"spec":{"resourceAttributes":{"namespace":%q,"verb":"create","resource":"secrets"}}}`, parsed.namespace)
	req, _ := http.NewRequest(http.MethodPost, "https://"+r.APIServer+"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(review))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return broken("API server", "%s is not reachable with the mounted CA: %v", r.APIServer, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return broken("API server", "%s refused the ServiceAccount token: %s: %s", r.APIServer, resp.Status, bytes.TrimSpace(body))
	}
	var out struct {
		Status struct {
			Allowed bool
			Reason  string
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return broken("API server", "%s answered the SelfSubjectAccessReview with %s: %v", r.APIServer, bytes.TrimSpace(body), err)
	}
	if !out.Status.Allowed {
		reason := ""
		if out.Status.Reason != "" {
			reason = " (" + out.Status.Reason + ")"
		}
		return broken("ServiceAccount permissions", "the ServiceAccount may not create Secrets in %s, where werf stores its releases%s",
			parsed.namespace, reason)
	}
	fmt.Printf("│ API server %s: the ServiceAccount may manage the release in %s\n", r.APIServer, parsed.namespace)
	return nil
}

// checkBundle asks the registry for the bundle's manifest, as werf's pull starts.
func checkBundle(r *Report, _ []string) error {
	host, name, _ := strings.Cut(parsed.repo, "/")
	scheme := "https"
	if parsed.insecure {
		scheme = "http"
	}
	url := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", scheme, host, name, parsed.tag)
	req, _ := http.NewRequest(http.MethodHead, url, nil)
	req.Header.Set("Accept", strings.Join([]string{"application/vnd.oci.image.manifest.v1+json",
		"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.v2+json"}, ", "))
	auth, err := dockerAuth(host)
	if err != nil {
		return err
	}
	if auth != "" {
		req.Header.Set("Authorization", "Basic "+auth)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return broken("bundle", "registry %s is not reachable from the pod (SSL_CERT_DIR=%q): %v", host, os.Getenv("SSL_CERT_DIR"), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return broken("bundle", "%s:%s: the registry refused the credentials of --docker-config=%q: %s",
			parsed.repo, parsed.tag, parsed.dockerConfig, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return broken("bundle", "%s:%s: the registry answered %s", parsed.repo, parsed.tag, resp.Status)
	}
	r.BundleDigest, r.DockerConfig, r.RegistryURL = resp.Header.Get("Docker-Content-Digest"), parsed.dockerConfig, url
	fmt.Printf("│ bundle %s:%s found (%s)\n", parsed.repo, parsed.tag, r.BundleDigest)
	return nil
}

// dockerAuth is the base64 user:password the --docker-config holds for host, as werf would send
// it; empty without --docker-config.
func dockerAuth(host string) (string, error) {
	if parsed.dockerConfig == "" {
		return "", nil
	}
	data, err := os.ReadFile(filepath.Join(parsed.dockerConfig, "config.json"))
	if err != nil {
		return "", broken("docker config", "%v", err)
	}
	var cfg struct {
		Auths map[string]struct{ Auth, Username, Password string }
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", broken("docker config", "%s/config.json: %v", parsed.dockerConfig, err)
	}
	a, ok := cfg.Auths[host]
	switch {
	case !ok:
		return "", broken("docker config", "%s/config.json has no entry for the registry %s", parsed.dockerConfig, host)
	case a.Auth != "":
		return a.Auth, nil
	case a.Username != "":
		return base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password)), nil
	}
	return "", broken("docker config", "the entry for %s in %s/config.json holds no credentials", host, parsed.dockerConfig)
}

func checkFailSwitch(r *Report, _ []string) error {
	sw, ok := r.Values[failKey].(map[string]any)
	if !ok {
		return nil
	}
	if msg, _ := sw["fail"].(string); msg != "" {
		return &contractError{part: "failing on purpose (values " + failKey + ".fail)", detail: msg}
	}
	return errors.New("values " + failKey + " is set but has no fail message")
}
