//go:build e2e

package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/server"
)

// The approval mail's SMTP server: a real one (emersion/go-smtp) on 127.0.0.1 offering STARTTLS
// under a certificate made for the test, AUTH PLAIN only after STARTTLS, mail only after AUTH.
const (
	smtpUser     = "slipway"
	smtpPassword = "smtp-s3cret"
)

// smtpMessage is one message the server accepted.
type smtpMessage struct {
	From string
	To   []string
	Data []byte
	User string
	TLS  bool
}

// smtpServer is the test's mail server: its address, the PEM file of its CA, and what it accepted.
type smtpServer struct {
	Addr   string
	CAFile string
	got    chan smtpMessage
}

func startSMTP(t *testing.T) *smtpServer {
	t.Helper()
	cert, caPEM := smtpCert(t)
	ts := &smtpServer{CAFile: filepath.Join(t.TempDir(), "smtp-ca.pem"), got: make(chan smtpMessage, 16)}
	if err := os.WriteFile(ts.CAFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{conn: c, srv: ts}, nil
	}))
	s.Domain = "localhost"
	s.ErrorLog = log.New(io.Discard, "", 0)
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return ts
}

// smtpCert is a self-signed certificate for 127.0.0.1 and its PEM (the --smtp-ca-file).
func smtpCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "smtp test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

type smtpSession struct {
	conn   *smtp.Conn
	srv    *smtpServer
	authed bool
	msg    smtpMessage
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != smtpUser || pass != smtpPassword {
			return smtp.ErrAuthFailed
		}
		s.authed, s.msg.User = true, user
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg = smtpMessage{From: from, User: s.msg.User}
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.msg.To = append(s.msg.To, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.msg.Data = b
	_, s.msg.TLS = s.conn.TLSConnectionState()
	select {
	case s.srv.got <- s.msg:
		return nil
	default:
		return errors.New("test server: inbox full")
	}
}

func (s *smtpSession) Reset()        {}
func (s *smtpSession) Logout() error { return nil }

// approvalMail is a received approval mail: its envelope, headers and decoded body.
type approvalMail struct {
	smtpMessage
	Header mail.Header
	Body   string
}

// awaitMail waits (30 s at most) for the mail of the approval of deployment id, and checks how
// it came: over STARTTLS, authenticated.
func (s *smtpServer) awaitMail(t *testing.T, deploymentID string) approvalMail {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-s.got:
			msg, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
			if err != nil {
				t.Fatalf("an unreadable mail: %v\n%s", err, m.Data)
			}
			body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
			if err != nil {
				t.Fatal(err)
			}
			if msg.Header.Get("X-Slipway-Deployment-Id") != deploymentID {
				t.Logf("a mail for another deployment (%s): %s", msg.Header.Get("X-Slipway-Deployment-Id"), msg.Header.Get("Subject"))
				continue
			}
			if !m.TLS || m.User != smtpUser {
				t.Fatalf("mail sent with TLS %v as %q, want STARTTLS as %s", m.TLS, m.User, smtpUser)
			}
			return approvalMail{smtpMessage: m, Header: msg.Header, Body: string(body)}
		case <-timeout:
			t.Fatalf("no approval mail for deployment %s within 30s", deploymentID)
		}
	}
}

// pendingApproval is the one pending approval of deployment id (GET /api/v1/approvals).
func pendingApproval(t *testing.T, p *proc, id string) server.DeploymentApproval {
	t.Helper()
	var list server.ApprovalList
	if err := json.Unmarshal(p.must("GET", "/api/v1/approvals?status=pending&deploymentId="+id, p.d.admin(), nil, http.StatusOK).body, &list); err != nil {
		t.Fatal(err)
	}
	var mine []server.DeploymentApproval
	for _, a := range list.Items {
		if a.DeploymentID == id && a.Status == "pending" {
			mine = append(mine, a)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("deployment %s has %d pending approvals, want 1: %+v", id, len(mine), list.Items)
	}
	return mine[0]
}

// TestApprovalMail_ThroughTheBinary: a manager serving with the SMTP flags mails every pending
// approval of a Production deployment to a real SMTP server (STARTTLS, AUTH PLAIN, the server's
// CA from --smtp-ca-file) within 30 s, with the approve link under --public-url and the
// approval's id in X-Slipway-Approval-Id. Approved by a Production owner who did not ask, the
// deployment completes; rejected by another Admin, it fails and nothing is installed.
func TestApprovalMail_ThroughTheBinary(t *testing.T) {
	t.Parallel()
	srv := fleet(t, 2).Servers[1]
	mailSrv := startSMTP(t)
	d := newDeployment(t, "postgres")
	d.extraEnv = append(d.extraEnv, "SLIPWAY_MANAGER_SMTP_PASSWORD="+smtpPassword)
	const publicURL = "https://slipway.example.org"
	p := d.serve("--insecure-http", "--smtp-address="+mailSrv.Addr, "--smtp-from=Slipway <slipway@example.org>",
		"--smtp-username="+smtpUser, "--smtp-ca-file="+mailSrv.CAFile, "--public-url="+publicURL,
		"--approval-recipients=Admin=admins@example.org;EnvironmentOwner:Production=prod-owners@example.org",
		"--operator-health-interval=2s")
	registerCluster(t, p, "mail-prod", "Production", srv.Kubeconfig)
	repo := operatorRepo(t).URL
	okOp, noOp := uniqueName("mail-ok"), uniqueName("mail-no")
	registerOperator(t, p, okOp, okOp, repo)
	registerOperator(t, p, noOp, noOp, repo)
	alice := d.admin() // the requester
	owner := d.token("olivia", auth.EnvironmentOwnerOf("Production"))
	carol := d.token("carol", auth.Admin)

	// Approved: the mail, then the approval by a Production owner, then the install.
	posted := time.Now()
	dep := postDeployment(t, p, alice, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": ["mail-prod"], "strategy": "Direct"}`, okOp))
	waitDeployment(t, p, dep.ID, "WaitingApproval", time.Minute)
	m := mailSrv.awaitMail(t, dep.ID)
	t.Logf("approval mail received %s after POST /api/v1/deployments", time.Since(posted).Round(time.Millisecond))
	a := pendingApproval(t, p, dep.ID)
	checkApprovalMail(t, m, a, publicURL, "prod-owners@example.org")
	p.must("POST", "/api/v1/approvals/"+a.ID+"/approve", alice, []byte(`{"comment": "mine"}`), http.StatusForbidden)
	p.must("POST", "/api/v1/approvals/"+a.ID+"/approve", owner, []byte(`{"comment": "go"}`), http.StatusOK)
	done := waitDeployment(t, p, dep.ID, "Completed", 3*time.Minute)
	rel, err := install.Status(context.Background(), srv.Config, okOp, okOp)
	if err != nil {
		t.Fatalf("the approved deployment's release: %v", err)
	}
	if rel.ChartVersion != "1.0.0" || rel.Status != "deployed" || done.Clusters[0].HelmRevision != rel.Revision {
		t.Fatalf("the approved deployment's release is %s %s revision %d; the deployment says revision %d",
			rel.ChartVersion, rel.Status, rel.Revision, done.Clusters[0].HelmRevision)
	}

	// Rejected: the mail, the rejection, Failed, nothing installed.
	dep2 := postDeployment(t, p, alice, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": ["mail-prod"], "strategy": "Direct"}`, noOp))
	waitDeployment(t, p, dep2.ID, "WaitingApproval", time.Minute)
	m2 := mailSrv.awaitMail(t, dep2.ID)
	a2 := pendingApproval(t, p, dep2.ID)
	checkApprovalMail(t, m2, a2, publicURL, "prod-owners@example.org")
	p.must("POST", "/api/v1/approvals/"+a2.ID+"/reject", carol, []byte(`{"comment": "not this week"}`), http.StatusOK)
	failed := waitDeployment(t, p, dep2.ID, "Failed", time.Minute)
	if !strings.Contains(failed.Reason, "not this week") && !strings.Contains(failed.Reason, "reject") {
		t.Errorf("the rejected deployment's reason %q names neither the rejection nor its comment", failed.Reason)
	}
	if c := failed.Clusters[0]; c.HelmRevision != 0 || c.InstallAttempts != 0 {
		t.Errorf("the rejected deployment's cluster: revision %d, %d install attempts; want none", c.HelmRevision, c.InstallAttempts)
	}
	// Give a wrongly running engine time to install anyway, then look in the cluster.
	time.Sleep(3 * time.Second)
	_, err = install.Status(context.Background(), srv.Config, noOp, noOp)
	var ie *invalid.Error
	if !errors.As(err, &ie) || ie.Reason != "notFound" {
		t.Fatalf("the rejected deployment's release: %v, want none", err)
	}
	var decided server.DeploymentApproval
	var all server.ApprovalList
	if err := json.Unmarshal(p.must("GET", "/api/v1/approvals?status=all&deploymentId="+dep2.ID, alice, nil, http.StatusOK).body, &all); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(all.Items, func(x server.DeploymentApproval) bool { return x.ID == a2.ID }); i >= 0 {
		decided = all.Items[i]
	}
	if decided.Status != "rejected" || len(decided.Decisions) != 1 || decided.Decisions[0].Actor != "carol" || decided.Decisions[0].Comment != "not this week" {
		t.Fatalf("the rejected approval: %+v", decided)
	}
	select {
	case extra := <-mailSrv.got:
		t.Errorf("an unexpected mail: %s", extra.Data)
	default:
	}
}

// checkApprovalMail checks an approval mail names approval a: its id header, its approve and
// reject links under publicURL, its recipient.
func checkApprovalMail(t *testing.T, m approvalMail, a server.DeploymentApproval, publicURL, to string) {
	t.Helper()
	if got := m.Header.Get("X-Slipway-Approval-Id"); got != a.ID {
		t.Errorf("X-Slipway-Approval-Id %q, want %s", got, a.ID)
	}
	for _, link := range []string{publicURL + "/api/v1/approvals/" + a.ID + "/approve", publicURL + "/api/v1/approvals/" + a.ID + "/reject"} {
		if !strings.Contains(m.Body, link) {
			t.Errorf("the mail has no link %s:\n%s", link, m.Body)
		}
	}
	if !slices.Contains(m.To, to) {
		t.Errorf("mailed to %v, want %s among them", m.To, to)
	}
	if a.Kind != "production" || a.RequiredRole != "EnvironmentOwner:Production" {
		t.Errorf("approval kind %s for %s, want production for EnvironmentOwner:Production", a.Kind, a.RequiredRole)
	}
}
