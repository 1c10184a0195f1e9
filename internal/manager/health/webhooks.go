package health

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// endpoint is where a webhook is served, as its configuration says.
type endpoint struct {
	name, kind string
	url        *string
	service    *serviceRef
	caBundle   []byte
	body       func(uid string) []byte
}

type serviceRef struct {
	namespace, name, path string
	port                  int32
}

func (e endpoint) String() string {
	if e.url != nil {
		return *e.url
	}
	return fmt.Sprintf("service %s/%s:%d%s", e.service.namespace, e.service.name, e.service.port, e.service.path)
}

// checkWebhooks finds the release's webhooks and calls each, concurrently.
func (c *Checker) checkWebhooks(ctx context.Context, cl *clients, t Target) api.WebhooksStatus {
	st := api.WebhooksStatus{Health: api.Healthy, Webhooks: []api.WebhookResult{}, Messages: []string{}}
	eps, problems := c.findWebhooks(ctx, cl, t)
	for _, p := range problems {
		st.Messages = append(st.Messages, notChecked(p))
		st.Health = api.Degraded
	}
	st.Total = len(eps)
	st.Webhooks = make([]api.WebhookResult, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() { st.Webhooks[i] = c.probe(ctx, cl, ep) })
	}
	wg.Wait()
	for _, r := range st.Webhooks {
		if r.Answer == api.VerdictPassed && r.Certificate != api.VerdictFailed {
			st.Healthy++
			continue
		}
		st.Health = api.Unhealthy
		st.Messages = append(st.Messages, fmt.Sprintf("%s webhook %s: %s", r.Kind, r.Name, r.Message))
	}
	return st
}

// ownedBy tells whether a cluster-scoped object belongs to the release: the instance label, or
// Helm's release annotations.
func ownedBy(m metav1.ObjectMeta, t Target) bool {
	if m.Labels[InstanceLabel] == t.Release {
		return true
	}
	return m.Annotations[ReleaseNameAnnotation] == t.Release &&
		(m.Annotations[ReleaseNamespaceAnnotation] == "" || m.Annotations[ReleaseNamespaceAnnotation] == t.Namespace)
}

// findWebhooks lists the release's admission webhooks and its CRDs' conversion webhooks; the
// problems are what could not be looked at.
func (c *Checker) findWebhooks(ctx context.Context, cl *clients, t Target) (eps []endpoint, problems []string) {
	adm := cl.kube.AdmissionregistrationV1()
	if vs, err := adm.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err != nil {
		problems = append(problems, "listing validating webhook configurations: "+err.Error())
	} else {
		for _, cfg := range vs.Items {
			if !ownedBy(cfg.ObjectMeta, t) {
				continue
			}
			for _, w := range cfg.Webhooks {
				eps = append(eps, admissionEndpoint(cfg.Name+"/"+w.Name, "Validating", w.ClientConfig, w.Rules))
			}
		}
	}
	if ms, err := adm.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err != nil {
		problems = append(problems, "listing mutating webhook configurations: "+err.Error())
	} else {
		for _, cfg := range ms.Items {
			if !ownedBy(cfg.ObjectMeta, t) {
				continue
			}
			for _, w := range cfg.Webhooks {
				eps = append(eps, admissionEndpoint(cfg.Name+"/"+w.Name, "Mutating", w.ClientConfig, w.Rules))
			}
		}
	}
	for _, name := range t.CRDs {
		crd, err := cl.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("conversion webhook of CRD %s: %v", name, err))
			continue
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		eps = append(eps, conversionEndpoint(crd))
	}
	return eps, problems
}

func admissionEndpoint(name, kind string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) endpoint {
	ep := endpoint{name: name, kind: kind, url: cc.URL, caBundle: cc.CABundle}
	if s := cc.Service; s != nil {
		ep.service = &serviceRef{namespace: s.Namespace, name: s.Name, port: 443}
		if s.Path != nil {
			ep.service.path = *s.Path
		}
		if s.Port != nil {
			ep.service.port = *s.Port
		}
	}
	var group, version, res string
	if len(rules) > 0 {
		r := rules[0]
		if len(r.APIGroups) > 0 {
			group = r.APIGroups[0]
		}
		if len(r.APIVersions) > 0 {
			version = r.APIVersions[0]
		}
		if len(r.Resources) > 0 {
			res = r.Resources[0]
		}
	}
	ep.body = func(uid string) []byte {
		b, _ := json.Marshal(map[string]any{
			"apiVersion": "admission.k8s.io/v1",
			"kind":       "AdmissionReview",
			"request": map[string]any{
				"uid":       uid,
				"kind":      map[string]string{"group": group, "version": version, "kind": ""},
				"resource":  map[string]string{"group": group, "version": version, "resource": res},
				"name":      "slipway-health-check",
				"operation": "CREATE",
				"userInfo":  map[string]any{"username": "slipway-manager:health-check"},
				"object":    nil,
				"dryRun":    true,
			},
		})
		return b
	}
	return ep
}

func conversionEndpoint(crd *apiextensionsv1.CustomResourceDefinition) endpoint {
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	ep := endpoint{name: crd.Name, kind: "Conversion", url: cc.URL, caBundle: cc.CABundle}
	if s := cc.Service; s != nil {
		ep.service = &serviceRef{namespace: s.Namespace, name: s.Name, port: 443}
		if s.Path != nil {
			ep.service.path = *s.Path
		}
		if s.Port != nil {
			ep.service.port = *s.Port
		}
	}
	desired := crd.Spec.Group + "/"
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			desired += v.Name
		}
	}
	ep.body = func(uid string) []byte {
		b, _ := json.Marshal(map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "ConversionReview",
			"request":    map[string]any{"uid": uid, "desiredAPIVersion": desired, "objects": []any{}},
		})
		return b
	}
	return ep
}

// review is the part of an AdmissionReview or ConversionReview answer the check reads.
type review struct {
	Response *struct {
		UID string `json:"uid"`
	} `json:"response"`
}

// probe calls one webhook with a minimal review within WebhookTimeout and checks its answer and,
// for a URL, its serving certificate.
func (c *Checker) probe(ctx context.Context, cl *clients, ep endpoint) api.WebhookResult {
	r := api.WebhookResult{Name: ep.name, Kind: ep.kind, Endpoint: ep.String(), Answer: api.VerdictFailed, Certificate: api.VerdictNotChecked}
	uid := string(uuid.NewUUID())
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WebhookTimeout)
	defer cancel()
	start := time.Now()
	var (
		code int
		body []byte
		err  error
	)
	if ep.url != nil {
		var cert certCheck
		code, body, cert, err = c.callURL(ctx, *ep.url, ep.caBundle, ep.body(uid))
		r.Certificate, r.CertificateExpires = cert.verdict, cert.expires
		if cert.verdict == api.VerdictFailed {
			r.Message = "certificate: " + cert.message
		}
	} else {
		code, body, err = callService(ctx, cl, ep.service, ep.body(uid))
	}
	r.LatencyMs = time.Since(start).Milliseconds()
	r.StatusCode = code
	var msg string
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = fmt.Sprintf("no answer within %s", c.cfg.WebhookTimeout)
	case err != nil && code == 0:
		msg = "call failed: " + err.Error()
	case code != http.StatusOK:
		msg = "answered " + strconv.Itoa(code) + ", want 200"
		if err != nil {
			msg += " (" + truncate(err.Error(), 200) + ")"
		}
	default:
		var rv review
		if jerr := json.Unmarshal(body, &rv); jerr != nil || rv.Response == nil || rv.Response.UID != uid {
			msg = "answered 200 without a review response for the request"
		} else {
			r.Answer = api.VerdictPassed
		}
	}
	if msg != "" && ep.service != nil {
		// The API server's proxy says little (a 503 "the server is currently unable to handle
		// the request"): say what the Service lacks, when that is why.
		if why := serviceWithoutEndpoint(parent, cl, ep.service); why != "" {
			msg = why + "; " + msg
		}
	}
	if msg != "" {
		if r.Message != "" {
			r.Message += "; "
		}
		r.Message += msg
	}
	return r
}

// certCheck is the serving certificate's check.
type certCheck struct {
	verdict api.Verdict
	expires *time.Time
	message string
}

// callURL POSTs body to a webhook URL. The TLS handshake accepts any certificate so that the
// call is made either way; the certificate is verified separately against caBundle (the system
// roots when empty), at the checker's time, for the URL's host.
func (c *Checker) callURL(ctx context.Context, raw string, caBundle, body []byte) (int, []byte, certCheck, error) {
	cert := certCheck{verdict: api.VerdictNotChecked}
	u, err := url.Parse(raw)
	if err != nil {
		return 0, nil, cert, err
	}
	var roots *x509.CertPool
	if len(caBundle) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caBundle) {
			cert = certCheck{verdict: api.VerdictFailed, message: "the caBundle holds no PEM certificate"}
		}
	}
	host := u.Hostname()
	tlsCfg := &tls.Config{
		InsecureSkipVerify: true, // verified below, so that a bad certificate is reported, not just refused
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				cert = certCheck{verdict: api.VerdictFailed, message: "no serving certificate"}
				return nil
			}
			leaf := cs.PeerCertificates[0]
			exp := leaf.NotAfter.UTC()
			if cert.verdict == api.VerdictFailed { // unusable caBundle
				cert.expires = &exp
				return nil
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, verr := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: host, CurrentTime: c.cfg.Now()})
			cert = certCheck{verdict: api.VerdictPassed, expires: &exp}
			if verr != nil {
				cert.verdict, cert.message = api.VerdictFailed, certProblem(verr, leaf, c.cfg.Now())
			}
			return nil
		},
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, DialContext: (&net.Dialer{}).DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
	if err != nil {
		return 0, nil, cert, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, nil, cert, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, cert, err
}

// certProblem says why a certificate did not verify.
func certProblem(err error, leaf *x509.Certificate, now time.Time) string {
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.Expired {
		if now.After(leaf.NotAfter) {
			return "expired at " + leaf.NotAfter.UTC().Format(time.RFC3339)
		}
		return "not valid before " + leaf.NotBefore.UTC().Format(time.RFC3339)
	}
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) {
		return "not signed by the configuration's caBundle"
	}
	var hn x509.HostnameError
	if errors.As(err, &hn) {
		return "not valid for the webhook's host: " + hn.Error()
	}
	return err.Error()
}

// callService POSTs body to a webhook service through the API server's service proxy. The proxy
// does not show the backend's certificate, so that is not checked.
func callService(ctx context.Context, cl *clients, s *serviceRef, body []byte) (int, []byte, error) {
	var code int
	res := cl.kube.CoreV1().RESTClient().Post().
		AbsPath("/api/v1/namespaces", s.namespace, "services", "https:"+s.name+":"+strconv.Itoa(int(s.port)), "proxy", s.path).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx)
	res.StatusCode(&code)
	raw, err := res.Raw()
	var st apierrors.APIStatus
	if code == 0 && errors.As(err, &st) {
		code = int(st.Status().Code)
	}
	return code, raw, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
