package webhookcert

import (
	"crypto/x509"
	"fmt"
	"maps"
	"time"
)

// material is what the Secret holds, parsed.
type material struct {
	// cas is ca.crt: the CA bundle, newest first.
	cas []*x509.Certificate
	// ca is the newest CA with ca.key; nil when either is missing or they do not match.
	ca *keyPair
	// serving is tls.crt with tls.key; nil when missing or not a pair.
	serving *keyPair
}

func parseMaterial(data map[string][]byte) material {
	m := material{cas: parseCerts(data[KeyCA])}
	if len(m.cas) > 0 {
		if ca, err := parseKeyPair(encodeCerts(m.cas[:1]), data[KeyCAKey]); err == nil && ca.cert.IsCA {
			m.ca = ca
		}
	}
	if s, err := parseKeyPair(data[KeyCert], data[KeyKey]); err == nil {
		m.serving = s
	}
	return m
}

// data returns old with the material's keys set (other keys are kept).
func (m material) data(old map[string][]byte) map[string][]byte {
	d := maps.Clone(old)
	if d == nil {
		d = map[string][]byte{}
	}
	d[KeyCA] = encodeCerts(m.cas)
	if m.ca != nil {
		d[KeyCAKey] = m.ca.keyPEM
	}
	if m.serving != nil {
		d[KeyCert], d[KeyKey] = m.serving.certPEM, m.serving.keyPEM
	}
	return d
}

// rotateCA makes ca the newest CA; the older ones stay in the bundle until they expire.
func (m *material) rotateCA(ca *keyPair) {
	m.ca = ca
	m.cas = append([]*x509.Certificate{ca.cert}, m.cas...)
}

// prune drops expired CAs other than the newest and reports whether it dropped any.
func (m *material) prune(now time.Time) bool {
	if len(m.cas) < 2 {
		return false
	}
	kept := m.cas[:1]
	for _, c := range m.cas[1:] {
		if now.Before(c.NotAfter) && !containsCert(kept, c) {
			kept = append(kept, c)
		}
	}
	pruned := len(kept) != len(m.cas)
	m.cas = kept
	return pruned
}

// caRenewal returns why the CA must be replaced, or "" when it is good. A CA is replaced when it
// has less than twice rotateBefore left, so the serving certificate it signed is replaced by one
// from its successor (rotateBefore before its own end) while the successor is already trusted.
func caRenewal(m material, now time.Time, rotateBefore time.Duration) string {
	switch {
	case len(m.cas) == 0:
		return "no CA"
	case m.ca == nil:
		return "the CA key is missing or does not match the CA"
	case !now.Add(2 * rotateBefore).Before(m.ca.cert.NotAfter):
		return fmt.Sprintf("the CA expires at %s", m.ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// servingRenewal returns why the serving certificate must be replaced, or "" when it is good.
// usable reports whether the current one still verifies against the bundle now, so it can go on
// serving until its replacement is trusted.
func servingRenewal(m material, h hosts, now time.Time, rotateBefore time.Duration) (reason string, usable bool) {
	if m.serving == nil {
		return "no serving certificate", false
	}
	pool := x509.NewCertPool()
	for _, c := range m.cas {
		pool.AddCert(c)
	}
	_, err := m.serving.cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	switch {
	case err != nil:
		return fmt.Sprintf("the serving certificate does not verify: %v", err), false
	case !now.Add(rotateBefore).Before(m.serving.cert.NotAfter):
		return fmt.Sprintf("the serving certificate expires at %s", m.serving.cert.NotAfter.UTC().Format(time.RFC3339)), true
	case !h.matches(m.serving.cert):
		return "the serving certificate names other hosts", true
	}
	return "", true
}

// nextCheck is when the material next needs attention: a renewal or an expired CA to prune.
func (m material) nextCheck(rotateBefore time.Duration) time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if m.ca != nil {
		earliest(m.ca.cert.NotAfter.Add(-2 * rotateBefore))
	}
	if m.serving != nil {
		earliest(m.serving.cert.NotAfter.Add(-rotateBefore))
	}
	for _, c := range m.cas[min(1, len(m.cas)):] {
		earliest(c.NotAfter)
	}
	return next
}
