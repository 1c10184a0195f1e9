package werfbundle

import (
	"flag"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestJobEnv_FlagReachesTheJobAfterItsOwnEnvironment: --werfbundle-job-env values (repeated) are
// the last entries of the werf container's environment, after HOME and WERF_TMP_DIR, and a value
// may hold '='.
func TestJobEnv_FlagReachesTheJobAfterItsOwnEnvironment(t *testing.T) {
	var env []corev1.EnvVar
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.Var(jobEnvFlag{env: &env}, "werfbundle-job-env", "")
	if err := fs.Parse([]string{"--werfbundle-job-env=KUBERNETES_SERVICE_HOST=10.0.0.7",
		"--werfbundle-job-env", "NO_PROXY=a=b,.svc"}); err != nil {
		t.Fatal(err)
	}
	b := testBundle("app")
	j := buildJob(jobSpec{bundle: b, targetNS: "prod", release: "app", image: "werf", secretName: "s", backoff: 1,
		deadline: 60, repoForWerf: b.Spec.Registry.URL, extraEnv: env}, jobRequest{Kind: KindApply, Tag: "1.0.0", Revision: "r"})
	got := j.Spec.Template.Spec.Containers[0].Env
	want := []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}, {Name: "WERF_TMP_DIR", Value: "/tmp"},
		{Name: "KUBERNETES_SERVICE_HOST", Value: "10.0.0.7"}, {Name: "NO_PROXY", Value: "a=b,.svc"}}
	if !slices.Equal(got, want) {
		t.Errorf("the Job's environment is %v, want %v", got, want)
	}
}

// TestJobEnv_RefusesWhatWouldBreakTheJob: a value without '=', an invalid name, a name the Job
// sets itself and a name given twice are refused with the reason, when the flags are parsed.
func TestJobEnv_RefusesWhatWouldBreakTheJob(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"HTTPS_PROXY"}, "want NAME=VALUE"},
		{[]string{"1BAD=x"}, "a valid environment variable name"},
		{[]string{"HOME=/root"}, "HOME is set by the Job itself"},
		{[]string{"SSL_CERT_DIR=/etc"}, "SSL_CERT_DIR is set by the Job itself"},
		{[]string{"A=1", "A=2"}, "A is given twice"},
	} {
		var env []corev1.EnvVar
		fs := flag.NewFlagSet("operator", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		fs.Var(jobEnvFlag{env: &env}, "werfbundle-job-env", "")
		var args []string
		for _, a := range tc.args {
			args = append(args, "--werfbundle-job-env="+a)
		}
		if err := fs.Parse(args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// FuzzParseJobEnv: whatever the flag's value, ParseJobEnv does not panic, and what it accepts is
// a valid, unreserved variable whose NAME=VALUE reads back the same.
func FuzzParseJobEnv(f *testing.F) {
	for _, seed := range []string{"KUBERNETES_SERVICE_HOST=10.0.0.7", "NO_PROXY=a=b,.svc", "HOME=/root", "=x", "A", "A=", "1A=b", "é=1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		e, err := ParseJobEnv(v)
		if err != nil {
			return
		}
		if e.Name+"="+e.Value != v || slices.Contains(ReservedJobEnv, e.Name) {
			t.Errorf("%q accepted as %q=%q", v, e.Name, e.Value)
		}
		if again, err := ParseJobEnv(e.Name + "=" + e.Value); err != nil || again != e {
			t.Errorf("%q does not read back: %+v, %v", v, again, err)
		}
	})
}
