package controlplane

// Pod health controls understood by the kwok stages pod-crashloop and pod-restart (see
// kwok-stages.yaml). Put them on a Deployment's pod template; they act on running pods.
const (
	// CrashLoopLabel ("true") makes running pods crash-loop: not Ready, every container waiting in
	// CrashLoopBackOff, its restartCount rising by one each RestartIntervalAnnotation.
	CrashLoopLabel = "slipway.dev/kwok-crashloop"
	// RestartLabel ("true") makes running pods restart: Ready and running again, restartCount
	// rising by one each RestartIntervalAnnotation.
	RestartLabel = "slipway.dev/kwok-restart"
	// RestartIntervalAnnotation sets the interval of both ("2s"); default 1s.
	RestartIntervalAnnotation = "slipway.dev/kwok-restart-interval"
)
