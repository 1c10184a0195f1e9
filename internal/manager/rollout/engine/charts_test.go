package engine

import (
	"strings"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
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
