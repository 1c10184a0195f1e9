package werfbundle

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ReservedJobEnv are the variables every Job sets itself: werf's writable home and temporary
// directory on the read-only root file system, and the CA directories of certSecretRef.
// --werfbundle-job-env cannot replace them.
var ReservedJobEnv = []string{"HOME", "WERF_TMP_DIR", "SSL_CERT_DIR"}

// jobEnvFlag is --werfbundle-job-env: NAME=VALUE, repeated, added to the Jobs' environment.
type jobEnvFlag struct{ env *[]corev1.EnvVar }

func (f jobEnvFlag) String() string {
	if f.env == nil {
		return ""
	}
	parts := make([]string, 0, len(*f.env))
	for _, e := range *f.env {
		parts = append(parts, e.Name+"="+e.Value)
	}
	return strings.Join(parts, ",")
}

// Set adds one NAME=VALUE, refusing a name that is invalid, reserved or given twice.
func (f jobEnvFlag) Set(v string) error {
	e, err := ParseJobEnv(v)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(*f.env, func(o corev1.EnvVar) bool { return o.Name == e.Name }) {
		return fmt.Errorf("%s is given twice", e.Name)
	}
	*f.env = append(*f.env, e)
	return nil
}

// ParseJobEnv reads one --werfbundle-job-env value, NAME=VALUE.
func ParseJobEnv(v string) (corev1.EnvVar, error) {
	name, value, ok := strings.Cut(v, "=")
	if !ok {
		return corev1.EnvVar{}, fmt.Errorf("%q: want NAME=VALUE", v)
	}
	if errs := validation.IsEnvVarName(name); len(errs) > 0 {
		return corev1.EnvVar{}, fmt.Errorf("%q: %s", name, strings.Join(errs, "; "))
	}
	if slices.Contains(ReservedJobEnv, name) {
		return corev1.EnvVar{}, fmt.Errorf("%s is set by the Job itself (werf's home, temporary and CA directories) and cannot be replaced", name)
	}
	return corev1.EnvVar{Name: name, Value: value}, nil
}
