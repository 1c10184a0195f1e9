package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// MaxValueLen bounds an argument's value.
const MaxValueLen = 253

// Builtins are the arguments every analysis gets from its deployment and target.
type Builtins struct {
	Cluster         string
	Namespace       string
	Release         string
	Operator        string
	Version         string
	PreviousVersion string
}

// names are the built-in placeholders, in documentation order.
func (Builtins) names() []string {
	return []string{"cluster", "namespace", "release", "operator", "version", "previousVersion"}
}

func (b Builtins) values() map[string]string {
	return map[string]string{"cluster": b.Cluster, "namespace": b.Namespace, "release": b.Release,
		"operator": b.Operator, "version": b.Version, "previousVersion": b.PreviousVersion}
}

func isBuiltin(name string) bool {
	_, ok := Builtins{}.values()[name]
	return ok
}

// CheckValue refuses a value that could break out of a PromQL string literal or label matcher:
// quotes, backticks, backslashes, control characters (newlines among them), or a very long one.
func CheckValue(name, v string) error {
	if len(v) > MaxValueLen {
		return fmt.Errorf("argument %s: at most %d characters", name, MaxValueLen)
	}
	for _, r := range v {
		if r == '"' || r == '\'' || r == '`' || r == '\\' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("argument %s: %q may not contain quotes, backticks, backslashes or control characters (it is placed inside a PromQL string)", name, clip(v))
		}
	}
	return nil
}

// Bind applies a reference's args to s: each overrides the declared arg of its name (an
// undeclared name is an error); every declared arg must end with a value.
func Bind(s Spec, given []api.AnalysisArg) (Spec, error) {
	vals := map[string]*string{}
	for _, a := range s.Args {
		vals[a.Name] = a.Value
	}
	seen := map[string]bool{}
	for _, a := range given {
		if _, ok := vals[a.Name]; !ok {
			if isBuiltin(a.Name) {
				return Spec{}, fmt.Errorf("analysis %s: argument %q is built in and set by the deployment", s.Name, a.Name)
			}
			return Spec{}, fmt.Errorf("analysis %s: unknown argument %q (declared: %s)", s.Name, a.Name, declaredNames(s.Args))
		}
		if seen[a.Name] {
			return Spec{}, fmt.Errorf("analysis %s: argument %q given twice", s.Name, a.Name)
		}
		seen[a.Name] = true
		if a.Value == nil {
			return Spec{}, fmt.Errorf("analysis %s: argument %q has no value", s.Name, a.Name)
		}
		if err := CheckValue(a.Name, *a.Value); err != nil {
			return Spec{}, fmt.Errorf("analysis %s: %w", s.Name, err)
		}
		v := *a.Value
		vals[a.Name] = &v
	}
	out := s
	out.Args = make([]api.AnalysisArg, len(s.Args))
	for i, a := range s.Args {
		if vals[a.Name] == nil {
			return Spec{}, fmt.Errorf("analysis %s: argument %q has no default and is not given", s.Name, a.Name)
		}
		out.Args[i] = api.AnalysisArg{Name: a.Name, Value: vals[a.Name]}
	}
	return out, nil
}

func declaredNames(args []api.AnalysisArg) string {
	if len(args) == 0 {
		return "none"
	}
	n := make([]string, len(args))
	for i, a := range args {
		n[i] = a.Name
	}
	return strings.Join(n, ", ")
}

// Render is s's query with the built-in and bound args in place. A built-in value that is not
// safe in a PromQL string is an error (the measurement's Error), never substituted.
func (s Spec) Render(b Builtins) (string, error) {
	vals := b.values()
	for k, v := range vals {
		if err := CheckValue(k, v); err != nil {
			return "", err
		}
	}
	for _, a := range s.Args {
		if a.Value == nil {
			return "", fmt.Errorf("argument %q has no value", a.Name)
		}
		vals[a.Name] = *a.Value
	}
	return render(s.Query, vals)
}

var placeholderRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// render replaces every {{name}} of q by vals[name], in one pass (a value is never expanded
// again); an unknown name or a stray "{{" is an error.
func render(q string, vals map[string]string) (string, error) {
	var err error
	out := placeholderRE.ReplaceAllStringFunc(q, func(m string) string {
		name := placeholderRE.FindStringSubmatch(m)[1]
		v, ok := vals[name]
		if !ok && err == nil {
			err = fmt.Errorf("unknown placeholder {{%s}} (built in: %s; declare others in args)", clip(name), strings.Join(Builtins{}.names(), ", "))
		}
		return v
	})
	if err != nil {
		return "", err
	}
	if rest := placeholderRE.ReplaceAllString(q, ""); strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return "", errors.New(`unbalanced "{{" or "}}": a placeholder is written {{name}}`)
	}
	return out, nil
}
