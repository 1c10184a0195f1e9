package webhookcert

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

func TestCARenewal(t *testing.T) {
	const rotateBefore = 10 * time.Minute
	ca := mustCA(t, t0, time.Hour) // ends at t0+1h
	other := mustCA(t, t0, time.Hour)
	tests := []struct {
		name string
		m    material
		now  time.Time
		want string
	}{
		{"no CA", material{}, t0, "no CA"},
		{"key of another CA", material{cas: []*x509.Certificate{ca.cert}, ca: nil}, t0, "does not match"},
		{"fresh", material{cas: []*x509.Certificate{ca.cert}, ca: ca}, t0, ""},
		{"just outside twice the lookahead", material{cas: []*x509.Certificate{ca.cert}, ca: ca}, t0.Add(39 * time.Minute), ""},
		{"within twice the lookahead", material{cas: []*x509.Certificate{ca.cert}, ca: ca}, t0.Add(40 * time.Minute), "expires"},
		{"expired", material{cas: []*x509.Certificate{ca.cert, other.cert}, ca: ca}, t0.Add(2 * time.Hour), "expires"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := caRenewal(tt.m, tt.now, rotateBefore)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("caRenewal = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestServingRenewal(t *testing.T) {
	const rotateBefore = 10 * time.Minute
	h := newHosts([]string{"svc.ns.svc", "localhost"})
	ca := mustCA(t, t0, 24*time.Hour)
	oldCA := mustCA(t, t0, 24*time.Hour)
	s := mustServing(t, ca, h, t0, time.Hour)
	fromOld := mustServing(t, oldCA, h, t0, time.Hour)
	otherHosts := mustServing(t, ca, newHosts([]string{"svc.ns.svc"}), t0, time.Hour)
	tests := []struct {
		name       string
		m          material
		now        time.Time
		want       string
		wantUsable bool
	}{
		{"missing", material{cas: []*x509.Certificate{ca.cert}, ca: ca}, t0, "no serving certificate", false},
		{"fresh", material{cas: []*x509.Certificate{ca.cert}, ca: ca, serving: s}, t0, "", true},
		{"signed by an older CA still in the bundle", material{cas: []*x509.Certificate{ca.cert, oldCA.cert}, ca: ca, serving: fromOld}, t0, "", true},
		{"signed by a CA gone from the bundle", material{cas: []*x509.Certificate{ca.cert}, ca: ca, serving: fromOld}, t0, "does not verify", false},
		{"within the lookahead", material{cas: []*x509.Certificate{ca.cert}, ca: ca, serving: s}, t0.Add(50 * time.Minute), "expires", true},
		{"expired", material{cas: []*x509.Certificate{ca.cert}, ca: ca, serving: s}, t0.Add(2 * time.Hour), "does not verify", false},
		{"other hosts", material{cas: []*x509.Certificate{ca.cert}, ca: ca, serving: otherHosts}, t0, "other hosts", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, usable := servingRenewal(tt.m, h, tt.now, rotateBefore)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) || usable != tt.wantUsable {
				t.Errorf("servingRenewal = %q, usable %v; want %q, usable %v", got, usable, tt.want, tt.wantUsable)
			}
		})
	}
}

func TestMaterial_RotatePruneAndRoundTrip(t *testing.T) {
	first := mustCA(t, t0, time.Hour)
	second := mustCA(t, t0.Add(50*time.Minute), time.Hour)
	m := material{cas: []*x509.Certificate{first.cert}, ca: first}
	m.rotateCA(second)
	if len(m.cas) != 2 || m.cas[0] != second.cert || m.ca != second {
		t.Fatalf("after rotation: %d CAs, newest first expected", len(m.cas))
	}
	if m.prune(t0.Add(59 * time.Minute)) {
		t.Error("pruned a CA that is still valid")
	}
	if next := m.nextCheck(10 * time.Minute); !next.Equal(first.cert.NotAfter) {
		t.Errorf("nextCheck = %s, want the old CA's expiry %s", next, first.cert.NotAfter)
	}
	if !m.prune(t0.Add(61*time.Minute)) || len(m.cas) != 1 {
		t.Errorf("the expired CA was not pruned: %d CAs", len(m.cas))
	}

	m.serving = mustServing(t, second, newHosts([]string{"x"}), t0.Add(50*time.Minute), 30*time.Minute)
	data := m.data(map[string][]byte{"extra": []byte("kept")})
	if string(data["extra"]) != "kept" {
		t.Error("data dropped a key it does not own")
	}
	back := parseMaterial(data)
	if back.ca == nil || back.serving == nil || len(back.cas) != 1 || !back.ca.cert.Equal(second.cert) {
		t.Fatalf("round trip lost material: %+v", back)
	}
	// The serving certificate is due 10 minutes before its end (t0+80m), before the CA (t0+110m-20m).
	if next := back.nextCheck(10 * time.Minute); !next.Equal(t0.Add(70 * time.Minute)) {
		t.Errorf("nextCheck = %s, want %s", next, t0.Add(70*time.Minute))
	}
}

func TestParseMaterial_CAKeyMustMatchTheNewestCA(t *testing.T) {
	a, b := mustCA(t, t0, time.Hour), mustCA(t, t0, time.Hour)
	m := parseMaterial(map[string][]byte{KeyCA: encodeCerts([]*x509.Certificate{a.cert, b.cert}), KeyCAKey: b.keyPEM})
	if m.ca != nil || len(m.cas) != 2 {
		t.Fatalf("ca = %v with %d CAs; want no usable CA (the key is the older CA's)", m.ca, len(m.cas))
	}
}
