package engine

import (
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// restarting is the chart whose controller pods become Ready and then restart every second
// (kwok's pod-restart stage): it installs fine and fails its health checks afterwards.
func restarting(files charttest.ChartFiles) charttest.ChartFiles {
	return podTemplate(files, "        "+controlplane.RestartLabel+": \"true\"\n",
		"        "+controlplane.RestartIntervalAnnotation+": 1s\n")
}

// unschedulable is the chart whose pods never leave Pending: its install times out not ready.
func unschedulable(files charttest.ChartFiles) charttest.ChartFiles {
	files["templates/deployment.yaml"] = strings.Replace(files["templates/deployment.yaml"],
		"      serviceAccountName:", "      nodeSelector:\n        slipway.dev/no-such-node: \"true\"\n      serviceAccountName:", 1)
	return files
}

// podTemplate adds a label line and an annotation line to the chart Deployment's pod template.
func podTemplate(files charttest.ChartFiles, label, annotation string) charttest.ChartFiles {
	const anchor = "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/instance: {{ .Release.Name }}\n"
	d := files["templates/deployment.yaml"]
	if !strings.Contains(d, anchor) {
		panic("charttest's deployment template changed: update podTemplate")
	}
	repl := anchor + label
	if annotation != "" {
		repl += "      annotations:\n" + annotation
	}
	files["templates/deployment.yaml"] = strings.Replace(d, anchor, repl, 1)
	return files
}

// goodThenBad registers operator with a good 1.0.0 and a 1.0.1 that bad breaks, starts the engine
// and deploys 1.0.0 to cluster (Direct, health checked): the live release a test then upgrades
// to the bad version.
func (h *harness) goodThenBad(operator, cluster string, bad func(charttest.ChartFiles) charttest.ChartFiles) *store.Deployment {
	h.t.Helper()
	h.operator(operator,
		charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible),
		bad(charttest.OperatorChart(chartName, "1.0.1", charttest.Compatible)))
	h.start()
	first := h.submit(fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": [%q], "strategy": "Direct"}`, operator, cluster))
	return h.waitStatus(first.ID, store.DeploymentCompleted)
}
