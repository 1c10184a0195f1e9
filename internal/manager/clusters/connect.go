package clusters

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// DefaultConnectTimeout bounds a connectivity check (registration, health check).
const DefaultConnectTimeout = 10 * time.Second

// tracer is the manager's tracer; spans are named after the design (cluster.connect).
var tracer = otel.Tracer("slipway/manager")

// ClusterInfo is what a connectivity check learns about a cluster.
type ClusterInfo struct {
	// KubernetesVersion is the API server's git version, e.g. "v1.37.1".
	KubernetesVersion string
}

// Connect parses a kubeconfig and checks, within DefaultConnectTimeout, that its current context
// reaches an API server that accepts its credentials: GET /version, then a list of one namespace
// (a cheap call that needs authorization). Unreachable → *invalid.Error reason "unreachable";
// 401/403 → reason "unauthorized"; a bad kubeconfig → the errors of ParseKubeconfig. No error
// holds a byte of the kubeconfig.
func Connect(ctx context.Context, kubeconfig []byte) (*ClusterInfo, error) {
	kc, err := ParseKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return connect(ctx, "", kc.RESTConfig(), DefaultConnectTimeout)
}

// connect runs the check of Connect with cfg, in span cluster.connect.
func connect(ctx context.Context, cluster string, cfg *rest.Config, timeout time.Duration) (_ *ClusterInfo, err error) {
	ctx, span := tracer.Start(ctx, "cluster.connect")
	if cluster != "" {
		span.SetAttributes(attribute.String("cluster", cluster))
	}
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	cs, err := kubernetes.NewForConfig(withTimeout(cfg, timeout))
	if err != nil {
		return nil, kubeconfigError("format", "does not give a usable client configuration")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := serverVersion(ctx, cs)
	if err != nil {
		return nil, classify("kubeconfig", "read the server version", err, timeout)
	}
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, classify("kubeconfig", "list namespaces", err, timeout)
	}
	span.SetAttributes(attribute.String("version", v))
	return &ClusterInfo{KubernetesVersion: v}, nil
}

// serverVersion is GET /version under ctx (Discovery().ServerVersion() takes no context).
func serverVersion(ctx context.Context, cs kubernetes.Interface) (string, error) {
	var info struct {
		GitVersion string `json:"gitVersion"`
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(body, &info); err != nil || info.GitVersion == "" {
		return "", errors.New("GET /version: the answer is not a Kubernetes version")
	}
	return info.GitVersion, nil
}

// withTimeout is cfg with timeout, the manager's user agent and rate limits, and W3C trace
// context on every request.
func withTimeout(cfg *rest.Config, timeout time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = timeout
	c.UserAgent = "slipway-manager"
	if c.QPS == 0 {
		c.QPS, c.Burst = 20, 40
	}
	// Every client of a cluster is built from here: its requests carry their span's traceparent.
	telemetry.TraceKubeRequests(c)
	return c
}

// classify turns a failed call to a cluster into an *invalid.Error on field that says why in a
// fixed sentence. The cause is not kept: client errors name the server's URL, which comes from
// the kubeconfig.
func classify(field, doing string, err error, timeout time.Duration) *invalid.Error {
	if e, ok := invalid.As(err); ok {
		return e
	}
	unreachable := func(why string) *invalid.Error {
		return &invalid.Error{Field: field, Reason: "unreachable", Message: "cannot reach the cluster's API server: " + why}
	}
	var status apierrors.APIStatus
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var dns *net.DNSError
	var netErr net.Error
	switch {
	case apierrors.IsUnauthorized(err):
		return &invalid.Error{Field: field, Reason: "unauthorized",
			Message: "the API server refused the credentials (401 Unauthorized): the token or client certificate is not valid for this cluster"}
	case apierrors.IsForbidden(err):
		return &invalid.Error{Field: field, Reason: "unauthorized",
			Message: "the credentials may not " + doing + " (403 Forbidden): registration needs a cluster-admin credential"}
	case errors.As(err, &status):
		return unreachable(fmt.Sprintf("the API server answered %d %s to %s", status.Status().Code, status.Status().Reason, doing))
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return unreachable(fmt.Sprintf("no answer within %s", timeout))
	case errors.Is(err, syscall.ECONNREFUSED):
		return unreachable("connection refused (nothing listens at the server's address)")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return unreachable("the connection was reset")
	case errors.As(err, &dns):
		return unreachable("the server's host name does not resolve")
	case errors.As(err, &unknownCA):
		return unreachable("TLS: the server's certificate is not signed by the kubeconfig's certificate-authority-data")
	case errors.As(err, &hostname):
		return unreachable("TLS: the server's certificate is not valid for the server's host name")
	case errors.As(err, &certInvalid):
		return unreachable("TLS: the server's certificate is not valid (expired or not for serving)")
	case errors.As(err, &record):
		return unreachable("the server does not speak TLS at that address")
	case errors.Is(err, context.Canceled):
		return unreachable("the check was cancelled")
	}
	return unreachable(fmt.Sprintf("%s failed (%s)", doing, errorKind(err)))
}

// errorKind names the innermost error's type, for a message that may not quote the error.
func errorKind(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
}
