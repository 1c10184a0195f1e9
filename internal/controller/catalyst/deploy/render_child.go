package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// A process started with renderChildEnv=1 is a renderer: it renders the chart it reads on stdin,
// writes the result on stdout and exits, before the program's main or TestMain runs. Any binary
// that links this package (the operator, its tests) can be one.
func init() {
	if os.Getenv(renderChildEnv) == "1" {
		os.Exit(renderChild(os.Stdin, os.Stdout))
	}
}

// renderChild is the renderer's whole life; it returns the exit code.
func renderChild(stdin io.Reader, stdout io.Writer) int {
	// Low priority: the operator's other work (and every other process) goes first.
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 10)
	// Confined before it reads anything of the pull request's (render_sandbox_linux.go); a
	// renderer that cannot be confined renders nothing.
	if err := sandbox(); err != nil {
		return answer(stdout, renderResponse{Unconfined: true, Error: "the renderer could not confine itself: " + err.Error()})
	}
	var req renderRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return answer(stdout, renderResponse{Error: "reading the render request: " + err.Error()})
	}
	what, out := "the chart's templates", renderResponse{}
	if req.Kind == renderKustomize {
		what = "the kustomization"
	}
	go watchHeap(req.MaxMemory, what, stdout)
	var size int64
	switch req.Kind {
	case renderHelm:
		files, err := renderChart(req)
		if err != nil {
			return answer(stdout, renderResponse{Error: err.Error()})
		}
		for _, f := range files {
			size += int64(len(f))
		}
		out.Files = files
	case renderKustomize:
		yaml, err := buildKustomization(&req)
		if err != nil {
			return answer(stdout, renderResponse{Error: err.Error()})
		}
		size, out.Output = int64(len(yaml)), yaml
	default:
		return answer(stdout, renderResponse{Error: fmt.Sprintf("unknown render kind %q", req.Kind)})
	}
	if size > req.MaxBytes {
		return answer(stdout, renderResponse{Limit: true,
			Error: fmt.Sprintf("%s rendered %d bytes, more than %d bytes (the render output limit)", what, size, req.MaxBytes)})
	}
	enc := encodeResponse(out)
	if int64(len(enc)) > answerCap(req.MaxBytes) {
		// Output heavy in control characters or invalid UTF-8 (6 bytes each once escaped).
		return answer(stdout, renderResponse{Limit: true,
			Error: fmt.Sprintf("%s rendered %d bytes, which take %d bytes once encoded for the operator (control characters and invalid UTF-8 take 6 bytes each), more than twice the render output limit of %d bytes and 1 MiB", what, size, len(enc), req.MaxBytes)})
	}
	answerOnce.Do(func() { _, _ = stdout.Write(enc) })
	return 0
}

func renderChart(req renderRequest) (map[string]string, error) {
	buffered := make([]*archive.BufferedFile, len(req.Files))
	for i, f := range req.Files {
		buffered[i] = &archive.BufferedFile{Name: f.Name, Data: f.Data}
	}
	chrt, err := chartloader.LoadFiles(buffered)
	if err != nil {
		return nil, err
	}
	if req.Values == nil {
		req.Values = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(chrt, req.Values); err != nil {
		return nil, fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	values, err := util.ToRenderValuesWithSchemaValidation(chrt, req.Values, req.Release, req.Caps, false)
	if err != nil {
		return nil, err
	}
	e := engine.New(lookupConfig())
	e.EnableDNS = false
	return e.RenderWithContext(context.Background(), chrt, values)
}

var answerOnce sync.Once

// maxErrorBytes bounds the error a renderer answers: a template's `fail` may say anything, at any
// length; the beginning says where it failed.
const maxErrorBytes = 4 << 10

// answer writes the one response of the renderer and returns its exit code.
func answer(w io.Writer, resp renderResponse) int {
	code := 0
	if resp.Error != "" {
		code = 2
		if len(resp.Error) > maxErrorBytes {
			resp.Error = strings.ToValidUTF8(resp.Error[:maxErrorBytes], "") + "... (cut)"
		}
	}
	out := encodeResponse(resp)
	answerOnce.Do(func() { _, _ = w.Write(out) })
	return code
}

// encodeResponse is resp in JSON with the rendered text left as it is (no HTML escaping, which
// would make each <, > and & six bytes).
func encodeResponse(resp renderResponse) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		b.Reset()
		_ = json.NewEncoder(&b).Encode(renderResponse{Error: "encoding the render response: " + err.Error()})
	}
	return b.Bytes()
}

// watchHeap ends the renderer when its heap passes max: the limit a template that expands
// without end reaches first.
func watchHeap(max int64, what string, stdout io.Writer) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for range time.Tick(10 * time.Millisecond) {
		metrics.Read(sample)
		if v := sample[0].Value; v.Kind() == metrics.KindUint64 && int64(v.Uint64()) > max {
			os.Exit(answer(stdout, renderResponse{Limit: true,
				Error: fmt.Sprintf("rendering %s used more than %d MiB of memory (the render memory limit); it expands without end", what, max>>20)}))
		}
	}
}
