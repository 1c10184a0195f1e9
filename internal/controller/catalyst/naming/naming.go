package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Label and annotation keys put on environment namespaces.
const (
	// LabelTeam holds the team, the namespace of the Project.
	LabelTeam = "catalyst.dev/team"
	// LabelProject holds the Project's name.
	LabelProject = "catalyst.dev/project"
	// LabelEnvironment holds the Environment's name.
	LabelEnvironment = "catalyst.dev/environment"
	// LabelBranch holds the environment's branch, sanitised to a label value.
	LabelBranch = "catalyst.dev/branch"
	// AnnotationBranch holds the environment's branch as it is.
	AnnotationBranch = "catalyst.dev/branch"
)

const (
	// MaxNameLength is the length limit of a namespace name (a DNS-1123 label).
	MaxNameLength = validation.DNS1123LabelMaxLength
	// HashLength is the number of hex digits of SHA-256 appended to shortened names and values.
	HashLength = 16
	// shortenedSeparator sits between the kept prefix and the hash of a shortened name. Full
	// names never contain it, so shortened names never equal full ones.
	shortenedSeparator = "--"
	// emptyPart stands for a part that normalises to nothing.
	emptyPart = "x"
)

// Normalize turns one part of a name (team, project or environment) into lowercase letters,
// digits and single inner dashes. See the package documentation for the rules.
func Normalize(part string) string {
	var b strings.Builder
	b.Grow(len(part))
	dash := false
	for i := 0; i < len(part); i++ {
		c := part[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteByte(c)
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return emptyPart
	}
	return b.String()
}

// FullName normalises the parts and joins them with '-', without any length limit. It is the
// identity of a name: two inputs get the same namespace name exactly when their full names
// are equal.
func FullName(parts ...string) string {
	norm := make([]string, len(parts))
	for i, p := range parts {
		norm[i] = Normalize(p)
	}
	return strings.Join(norm, "-")
}

// Shorten returns full as it is when it has at most 63 characters, otherwise its first 45
// characters (without a trailing '-'), "--" and the first 16 hex digits of its SHA-256.
// full must be a FullName.
func Shorten(full string) string {
	if len(full) <= MaxNameLength {
		return full
	}
	keep := MaxNameLength - len(shortenedSeparator) - HashLength
	prefix := strings.TrimRight(full[:keep], "-")
	return prefix + shortenedSeparator + hashHex(full)
}

// NamespaceName is the namespace of an environment: <team>-<project>-<environment>, normalised and
// shortened to a DNS-1123 label.
func NamespaceName(team, project, environment string) string {
	return Shorten(FullName(team, project, environment))
}

// ProjectNamespaceName is the namespace where a project's Environments live: <team>-<project>,
// normalised and shortened to a DNS-1123 label.
func ProjectNamespaceName(team, project string) string {
	return Shorten(FullName(team, project))
}

// LabelValue turns s into a valid label value: bytes other than A-Z, a-z, 0-9, '-', '_' and '.'
// become '-', leading and trailing non-alphanumerics are dropped, and a value longer than 63
// characters keeps its first 46 and gets '-' and 16 hex digits of the SHA-256 of s. A non-empty
// s with nothing left is replaced by the hash alone. Valid label values come back unchanged.
func LabelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !isLabelByte(c) {
			b[i] = '-'
		}
	}
	v := strings.TrimFunc(string(b), func(r rune) bool { return !isAlphanumeric(r) })
	switch {
	case s == "":
		return ""
	case v == "":
		return hashHex(s)
	case len(v) <= validation.LabelValueMaxLength:
		return v
	}
	keep := validation.LabelValueMaxLength - 1 - HashLength
	prefix := strings.TrimRightFunc(v[:keep], func(r rune) bool { return !isAlphanumeric(r) })
	return prefix + "-" + hashHex(s)
}

// Labels are the labels of an environment namespace. The branch label is left out when branch
// is empty.
func Labels(team, project, environment, branch string) map[string]string {
	l := map[string]string{
		LabelTeam:        LabelValue(team),
		LabelProject:     LabelValue(project),
		LabelEnvironment: LabelValue(environment),
	}
	if branch != "" {
		l[LabelBranch] = LabelValue(branch)
	}
	return l
}

// Annotations are the annotations of an environment namespace: the raw branch, when there is one.
func Annotations(branch string) map[string]string {
	if branch == "" {
		return map[string]string{}
	}
	return map[string]string{AnnotationBranch: branch}
}

// MatchesEnvironment reports whether labels (of a namespace) name this environment. The
// controller only adopts, changes or deletes namespaces for which it is true.
func MatchesEnvironment(labels map[string]string, team, project, environment string) bool {
	return labels[LabelTeam] == LabelValue(team) &&
		labels[LabelProject] == LabelValue(project) &&
		labels[LabelEnvironment] == LabelValue(environment)
}

// IngressHost is the host name of an environment: <environment>.<domain>. The environment part
// is one DNS label (normalised and shortened like a namespace name); the domain is lowercased
// and must be a DNS subdomain whose labels have at most 63 characters. The host must fit in 253
// characters.
func IngressHost(environment, domain string) (string, error) {
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	if err := validateDomain(domain); err != nil {
		return "", err
	}
	host := Shorten(FullName(environment)) + "." + domain
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return "", fmt.Errorf("host %q of environment %q is not a valid host name: %s", host, environment, strings.Join(errs, "; "))
	}
	return host, nil
}

// WildcardHost is the host a shared certificate must cover for every environment of domain.
func WildcardHost(domain string) string {
	return "*." + strings.TrimSuffix(strings.ToLower(domain), ".")
}

func validateDomain(domain string) error {
	if domain == "" {
		return fmt.Errorf("preview domain is empty")
	}
	if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
		return fmt.Errorf("preview domain %q is not a DNS subdomain: %s", domain, strings.Join(errs, "; "))
	}
	for _, label := range strings.Split(domain, ".") {
		if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
			return fmt.Errorf("preview domain %q: label %q: %s", domain, label, strings.Join(errs, "; "))
		}
	}
	return nil
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:HashLength]
}

func isLabelByte(c byte) bool {
	return isAlphanumeric(rune(c)) || c == '-' || c == '_' || c == '.'
}

func isAlphanumeric(r rune) bool {
	return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}
