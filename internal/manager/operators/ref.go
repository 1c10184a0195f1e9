package operators

import (
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// ChartRef names a chart in a source: Repository is an https:// or http:// chart repository URL
// (the directory holding index.yaml) or an oci://host[:port]/path reference under which the chart
// is the repository <path>/<Name>, as `helm push` lays it out.
type ChartRef struct {
	Repository string `json:"repository"`
	Name       string `json:"name"`
	// Auth authenticates every read of the source; it is never serialized.
	Auth Credentials `json:"-"`
}

// Version is one version of a chart as its source lists it.
type Version struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion,omitempty"`
	// Digest is the chart archive's sha256 for an HTTP repository (from index.yaml) and the
	// manifest digest for OCI, as "sha256:<hex>"; empty when the source gives none.
	Digest string `json:"digest,omitempty"`

	// location is where the source keeps this version's archive (an HTTP repository's URL).
	location string
}

// Source schemes.
const (
	schemeHTTPS = "https"
	schemeHTTP  = "http"
	schemeOCI   = "oci"
)

// maxChartNameLength bounds a chart name; Helm names are short, and an OCI path must fit.
const maxChartNameLength = 250

// ValidateRef checks ref's syntax: a repository URL with a known scheme and a host, and a chart
// name Helm accepts. It returns *invalid.Error naming chart.repository or chart.name.
func ValidateRef(ref ChartRef) error {
	if _, err := parseRepository(ref.Repository); err != nil {
		return err
	}
	return validateChartName(ref.Name)
}

func parseRepository(raw string) (*url.URL, error) {
	const field = "chart.repository"
	if strings.TrimSpace(raw) == "" {
		return nil, &invalid.Error{Field: field, Reason: "required", Message: "a chart repository URL (https://, http:// or oci://) is required"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalid.Reasoned(field, "format", err, "not a URL: %q", raw)
	}
	switch u.Scheme {
	case schemeHTTPS, schemeHTTP, schemeOCI:
	default:
		return nil, invalid.Reasoned(field, "format", nil, "scheme %q is not supported: use https://, http:// or oci://", u.Scheme)
	}
	if u.Host == "" {
		return nil, invalid.Reasoned(field, "format", nil, "%q has no host", raw)
	}
	if u.User != nil {
		return nil, invalid.Reasoned(field, "format", nil, "credentials in the repository URL are not accepted")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, invalid.Reasoned(field, "format", nil, "the repository URL must not have a query or fragment")
	}
	if u.Scheme == schemeOCI && strings.ContainsAny(u.Path, ":@") {
		return nil, invalid.Reasoned(field, "format", nil, "the repository must not name a tag or digest: versions are discovered")
	}
	return u, nil
}

func validateChartName(name string) error {
	const field = "chart.name"
	switch {
	case name == "":
		return &invalid.Error{Field: field, Reason: "required", Message: "a chart name is required"}
	case len(name) > maxChartNameLength:
		return invalid.Reasoned(field, "format", nil, "longer than %d characters", maxChartNameLength)
	case strings.ContainsAny(name, "/\\:@?#% ") || name == "." || name == "..":
		return invalid.Reasoned(field, "format", nil, "%q is not a chart name", name)
	}
	return nil
}

// maxReleaseName is Helm's limit on a release name, which an operator's name becomes.
const maxReleaseName = 53

// ValidateName checks an operator's name: a DNS-1123 label of at most 53 characters (it names
// the Helm release in each cluster), reported against field.
func ValidateName(field, name string) error {
	if err := dns1123Label(field, name); err != nil {
		return err
	}
	if len(name) > maxReleaseName {
		return invalid.Reasoned(field, "format", nil, "%q is longer than %d characters, Helm's limit for a release name", name, maxReleaseName)
	}
	return nil
}

// ValidateNamespace checks the namespace an operator is installed into: a DNS-1123 label.
func ValidateNamespace(field, namespace string) error {
	return dns1123Label(field, namespace)
}

func dns1123Label(field, s string) error {
	if s == "" {
		return &invalid.Error{Field: field, Reason: "required", Message: "required"}
	}
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return invalid.Reasoned(field, "format", nil, "%q is not a DNS-1123 label: %s", s, strings.Join(errs, "; "))
	}
	return nil
}

// ParseFilter parses a versions filter, a Masterminds semver constraint such as ">=1.2 <2";
// "" is no filter (nil). A bad one is *invalid.Error for field "versions".
func ParseFilter(filter string) (*semver.Constraints, error) {
	if strings.TrimSpace(filter) == "" {
		return nil, nil
	}
	c, err := semver.NewConstraint(filter)
	if err != nil {
		return nil, invalid.Reasoned("versions", "format", err, "%q is not a semver constraint: %v", filter, err)
	}
	return c, nil
}
