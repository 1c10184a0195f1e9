package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"k8s.io/client-go/rest"
)

// A chart's templates come from a pull request: they may loop or expand without end, and Go's
// text/template cannot be stopped from outside. So they never run in the operator. The operator
// starts itself again as a renderer (the same executable with renderChildEnv set; see
// render_child.go), hands it the chart, the values and the cluster's capabilities on stdin, and
// reads the rendered files from its stdout. The renderer runs on one CPU at low priority, bounds
// its own heap, and is killed at RenderLimits.Timeout; its `lookup` calls go to the API server as
// the environment's ServiceAccount, like everything else of the deploy. Helm then installs what
// was rendered (renderedChart), so the chart's templates are executed exactly once, there.

// renderChildEnv, set to "1", makes the process a renderer (render_child.go's init).
const renderChildEnv = "SLIPWAY_CATALYST_RENDERER"

func (l RenderLimits) withDefaults() RenderLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultRenderTimeout
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultRenderMaxBytes
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = DefaultRenderMaxMemory
	}
	if l.Concurrency <= 0 {
		l.Concurrency = DefaultRenderConcurrency
	}
	return l
}

// renderRequest is what the renderer reads on stdin.
type renderRequest struct {
	Files     []renderFile          `json:"files"`
	Values    map[string]any        `json:"values"`
	Release   common.ReleaseOptions `json:"release"`
	Caps      *common.Capabilities  `json:"capabilities"`
	Kube      kubeAccess            `json:"kube"`
	MaxBytes  int64                 `json:"maxBytes"`
	MaxMemory int64                 `json:"maxMemory"`
}

type renderFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// renderResponse is what the renderer writes on stdout: the rendered files by template path
// (partials aside), or the error.
type renderResponse struct {
	Files map[string]string `json:"files,omitempty"`
	Error string            `json:"error,omitempty"`
	// Limit is set when the error is a limit the renderer reached.
	Limit bool `json:"limit,omitempty"`
}

// kubeAccess is how the renderer reaches the API server for `lookup`: the operator's connection
// settings and credentials, impersonating the environment's ServiceAccount. Credentials given
// as an exec or auth-provider plugin are not passed: `lookup` then fails as unauthorised.
type kubeAccess struct {
	Host            string `json:"host"`
	APIPath         string `json:"apiPath,omitempty"`
	Insecure        bool   `json:"insecure,omitempty"`
	ServerName      string `json:"serverName,omitempty"`
	CAData          []byte `json:"caData,omitempty"`
	CAFile          string `json:"caFile,omitempty"`
	CertData        []byte `json:"certData,omitempty"`
	CertFile        string `json:"certFile,omitempty"`
	KeyData         []byte `json:"keyData,omitempty"`
	KeyFile         string `json:"keyFile,omitempty"`
	BearerToken     string `json:"bearerToken,omitempty"`
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	Impersonate     string `json:"impersonate"`
}

func accessOf(cfg *rest.Config) kubeAccess {
	return kubeAccess{
		Host: cfg.Host, APIPath: cfg.APIPath, Insecure: cfg.Insecure, ServerName: cfg.ServerName,
		CAData: cfg.CAData, CAFile: cfg.CAFile, CertData: cfg.CertData, CertFile: cfg.CertFile,
		KeyData: cfg.KeyData, KeyFile: cfg.KeyFile, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile,
		Impersonate: cfg.Impersonate.UserName,
	}
}

func (a kubeAccess) config() *rest.Config {
	return &rest.Config{
		Host: a.Host, APIPath: a.APIPath,
		TLSClientConfig: rest.TLSClientConfig{Insecure: a.Insecure, ServerName: a.ServerName, CAData: a.CAData, CAFile: a.CAFile,
			CertData: a.CertData, CertFile: a.CertFile, KeyData: a.KeyData, KeyFile: a.KeyFile},
		BearerToken: a.BearerToken, BearerTokenFile: a.BearerTokenFile,
		Impersonate: rest.ImpersonationConfig{UserName: a.Impersonate},
		QPS:         20, Burst: 40, Timeout: 30 * time.Second,
	}
}

// renderSlots bound the renderings in flight (RenderLimits.Concurrency) and count those that wait
// for a place. Every identity of an Engine shares them.
type renderSlots struct {
	slots   chan struct{}
	waiting atomic.Int64
}

func newRenderSlots(n int) *renderSlots { return &renderSlots{slots: make(chan struct{}, n)} }

// acquire waits for a place, or for ctx to end.
func (s *renderSlots) acquire(ctx context.Context) error {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *renderSlots) release() { <-s.slots }

// RenderStats are the renderings of charts' templates of an Engine at one moment.
type RenderStats struct {
	// Running renderings, each a renderer process: at most RenderLimits.Concurrency.
	Running int
	// Waiting renderings, for a running one to end.
	Waiting int
}

// RenderStats says how many renderings run and how many wait now.
func (e *Engine) RenderStats() RenderStats {
	return RenderStats{Running: len(e.renders.slots), Waiting: int(e.renders.waiting.Load())}
}

// renderTemplates renders the chart made of files in a renderer process, within e.opts.Render.
// A template error or a limit reached is ErrInvalidChart; a renderer that cannot be run is an
// error as it is (transient).
func (e *Engine) renderTemplates(ctx context.Context, files []*archive.BufferedFile, values map[string]any, rel common.ReleaseOptions) (map[string]string, error) {
	limits := e.opts.Render
	if err := e.renders.acquire(ctx); err != nil {
		return nil, err
	}
	defer e.renders.release()
	caps, err := e.caps.get()
	if err != nil {
		return nil, err
	}
	req := renderRequest{Values: values, Release: rel, Caps: caps, Kube: accessOf(e.config),
		MaxBytes: limits.MaxBytes, MaxMemory: limits.MaxMemory}
	for _, f := range files {
		req.Files = append(req.Files, renderFile{Name: f.Name, Data: f.Data})
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the render request: %w", err)
	}
	out, runErr, timedOut := runRenderer(ctx, in, limits)
	if timedOut {
		return nil, fmt.Errorf("%w: rendering the chart's templates took longer than %s (the render timeout); a template loops or expands without end",
			ErrInvalidChart, limits.Timeout)
	}
	var resp renderResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("the chart renderer failed: %w", runErr)
		}
		return nil, fmt.Errorf("the chart renderer's answer: %w", err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("%w: %s", ErrInvalidChart, resp.Error)
	}
	return resp.Files, nil
}

// runRenderer runs the renderer with in on stdin; out is its stdout (bounded). timedOut reports
// that it was killed at limits.Timeout.
func runRenderer(ctx context.Context, in []byte, limits RenderLimits) (out []byte, err error, timedOut bool) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the operator's executable to render with: %w", err), false
	}
	rctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()
	// The renderer dies with the thread that started it (parent-death signal): keep this
	// goroutine on its thread until the renderer is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(rctx, exe)
	cmd.Env = []string{renderChildEnv + "=1", "GOMAXPROCS=1", "GOTRACEBACK=single"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdin = bytes.NewReader(in)
	stdout := &cappedBuffer{max: answerCap(limits.MaxBytes)}
	stderr := &cappedBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return nil, nil, true
	}
	if ctx.Err() != nil {
		return nil, ctx.Err(), false
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, lastLine(msg))
		}
	}
	if stdout.dropped {
		// The renderer bounds its answer itself (answerCap): one that does not is broken.
		return nil, fmt.Errorf("the renderer's answer is larger than %d bytes", stdout.max), false
	}
	return stdout.Bytes(), err, false
}

// answerCap bounds the renderer's answer: twice the render output limit (JSON escapes newlines
// and quotes in 2 bytes) and 1 MiB for the template names.
func answerCap(maxBytes int64) int64 { return 2*maxBytes + 1<<20 }

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// cappedBuffer keeps at most max bytes and drops the rest, so a renderer cannot make the operator
// hold more than that. It has no ReadFrom (as an embedded bytes.Buffer would give it), so that
// io.Copy goes through Write.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int64
	dropped bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := max(b.max-int64(b.buf.Len()), 0)
	if int64(len(p)) > room {
		b.dropped = true
	}
	b.buf.Write(p[:min(int64(len(p)), room)])
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *cappedBuffer) String() string { return b.buf.String() }
