package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// A chart's templates come from a pull request: they may loop or expand without end, and Go's
// text/template cannot be stopped from outside. So they never run in the operator. The operator
// starts itself again as a renderer (the same executable with renderChildEnv set; see
// render_child.go), hands it the chart, the values and the cluster's capabilities on stdin, and
// reads the rendered files from its stdout. The renderer runs on one CPU at low priority, bounds
// its own heap, and is killed at RenderLimits.Timeout. It holds no credential and knows no address
// of the API server: its `lookup` calls go to the operator over a socket it inherits (fd 3), and
// the operator makes them as the environment's deployer, within the environment's namespace
// (render_lookup.go). Helm then installs what was rendered (renderedChart), so the chart's
// templates are executed exactly once, there.

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
	if l.LookupTimeout <= 0 {
		l.LookupTimeout = DefaultLookupTimeout
	}
	if l.LookupMaxBytes <= 0 {
		l.LookupMaxBytes = DefaultLookupMaxBytes
	}
	return l
}

// renderStarting, when set (by tests), sees the environment and the request of every renderer.
var renderStarting func(env []string, request []byte)

// What a renderer renders (renderRequest.Kind).
const (
	renderHelm      = "helm"
	renderKustomize = "kustomize"
)

// renderRequest is what the renderer reads on stdin: a chart (its files, values, release and the
// cluster's capabilities) or a kustomization (the repository's files and the directory).
type renderRequest struct {
	Kind      string                `json:"kind"`
	Files     []renderFile          `json:"files"`
	Dir       string                `json:"dir,omitempty"`
	Values    map[string]any        `json:"values"`
	Release   common.ReleaseOptions `json:"release"`
	Caps      *common.Capabilities  `json:"capabilities"`
	MaxBytes  int64                 `json:"maxBytes"`
	MaxMemory int64                 `json:"maxMemory"`
}

type renderFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// renderResponse is what the renderer writes on stdout: the rendered files by template path
// (partials aside) of a chart, the YAML of a kustomization, or the error.
type renderResponse struct {
	Files  map[string]string `json:"files,omitempty"`
	Output string            `json:"output,omitempty"`
	Error  string            `json:"error,omitempty"`
	// Limit is set when the error is a limit the renderer reached.
	Limit bool `json:"limit,omitempty"`
	// Unconfined is set when the renderer could not confine itself (render_sandbox_linux.go): a
	// fault of where the operator runs, not of the source.
	Unconfined bool `json:"unconfined,omitempty"`
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
	caps, err := e.caps.get()
	if err != nil {
		return nil, err
	}
	req := renderRequest{Kind: renderHelm, Values: values, Release: rel, Caps: caps}
	for _, f := range files {
		req.Files = append(req.Files, renderFile{Name: f.Name, Data: f.Data})
	}
	lookups, err := e.lookupProxy(rel.Namespace)
	if err != nil {
		return nil, err
	}
	resp, err := e.render(ctx, req, lookups)
	if err != nil {
		return nil, err
	}
	return resp.Files, nil
}

// render runs req in a renderer process within e.opts.Render, once a place is free. An error of
// the source (the renderer's error, a limit reached) wraps ErrInvalidChart for a chart and
// ErrKustomizeBuild for a kustomization; a renderer that cannot be run is an error as it is
// (transient).
func (e *Engine) render(ctx context.Context, req renderRequest, lookups http.Handler) (renderResponse, error) {
	limits := e.opts.Render
	source, slow := ErrInvalidChart, "rendering the chart's templates took longer than %s (the render timeout); a template loops or expands without end"
	if req.Kind == renderKustomize {
		source, slow = ErrKustomizeBuild, "building the kustomization took longer than %s (the render timeout)"
	}
	if err := e.renders.acquire(ctx); err != nil {
		return renderResponse{}, err
	}
	defer e.renders.release()
	req.MaxBytes, req.MaxMemory = limits.MaxBytes, limits.MaxMemory
	in, err := json.Marshal(req)
	if err != nil {
		return renderResponse{}, fmt.Errorf("encoding the render request: %w", err)
	}
	out, runErr, timedOut := runRenderer(ctx, in, limits, lookups)
	if timedOut {
		return renderResponse{}, fmt.Errorf("%w: "+slow, source, limits.Timeout)
	}
	var resp renderResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		if runErr != nil {
			return renderResponse{}, fmt.Errorf("the renderer failed: %w", runErr)
		}
		return renderResponse{}, fmt.Errorf("the renderer's answer: %w", err)
	}
	if resp.Unconfined {
		return renderResponse{}, errors.New(resp.Error)
	}
	if resp.Error != "" {
		return renderResponse{}, fmt.Errorf("%w: %s", source, resp.Error)
	}
	return resp, nil
}

// runRenderer runs the renderer with in on stdin; out is its stdout (bounded). timedOut reports
// that it was killed at limits.Timeout. When lookups is not nil, the renderer inherits a socket
// as fd 3 over which lookups answers its HTTP requests.
func runRenderer(ctx context.Context, in []byte, limits RenderLimits, lookups http.Handler) (out []byte, err error, timedOut bool) {
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
	// Nothing of the operator's environment: no kubeconfig, no token, no proxy settings.
	cmd.Env = []string{renderChildEnv + "=1", "GOMAXPROCS=1", "GOTRACEBACK=single"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if lookups != nil {
		sock, stop, err := serveOverSocket(lookups)
		if err != nil {
			return nil, err, false
		}
		defer stop()
		cmd.ExtraFiles = []*os.File{sock}
	}
	if renderStarting != nil {
		renderStarting(cmd.Env, in)
	}
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
