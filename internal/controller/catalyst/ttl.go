package catalyst

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// effectiveTTL is the environment's lifetime: its own spec.ttl ("0s" is never), else the
// project's defaultTTL for development environments; 0 means it does not expire.
func effectiveTTL(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project) time.Duration {
	if env.Spec.TTL != nil {
		return env.Spec.TTL.Duration
	}
	if env.Spec.Type == catalystv1alpha1.EnvironmentTypeDeployment || project == nil || project.Spec.DefaultTTL == nil {
		return 0
	}
	return project.Spec.DefaultTTL.Duration
}

// ttlBase is when the environment's TTL starts: its creation, or the first time the controller
// saw its current generation when that is later than 1 (a spec change). The second is recorded in
// the AnnotationSpecSince annotation; change reports whether the annotation must be (re)written.
func ttlBase(env *catalystv1alpha1.Environment, now time.Time) (base time.Time, annotation string, change bool) {
	created := env.CreationTimestamp.Time
	if env.Generation <= 1 {
		return created, "", false
	}
	if gen, at, ok := parseSpecSince(env.Annotations[AnnotationSpecSince]); ok && gen == env.Generation {
		if at.Before(created) {
			at = created
		}
		return at, "", false
	}
	at := now.UTC().Truncate(time.Second)
	return at, fmt.Sprintf("%d/%s", env.Generation, at.Format(time.RFC3339)), true
}

func parseSpecSince(v string) (int64, time.Time, bool) {
	g, t, ok := strings.Cut(v, "/")
	if !ok {
		return 0, time.Time{}, false
	}
	gen, err := strconv.ParseInt(g, 10, 64)
	if err != nil {
		return 0, time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, t)
	if err != nil {
		return 0, time.Time{}, false
	}
	return gen, at, true
}
