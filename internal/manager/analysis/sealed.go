package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Sealer seals and opens secrets under named keys (*clusters.Keyring, the keyring of the
// clusters' credentials).
type Sealer interface {
	Seal(plaintext, additionalData []byte) ([]byte, string, error)
	Open(ciphertext []byte, keyID string, additionalData []byte) ([]byte, error)
	Primary() string
}

// secret is the JSON sealed for a cluster's Prometheus.
type secret struct {
	Token    string `json:"token,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// aad binds a ciphertext to its cluster (by id: a cluster registered again under the same name
// does not open the old one's).
func aad(clusterID string) []byte {
	return []byte("slipway-manager/v1/cluster-prometheus/" + clusterID)
}

// Seal is p as stored for the cluster (id, name): its secret sealed by s, nil for auth none.
func Seal(s Sealer, clusterID, clusterName string, p Prometheus) (*store.ClusterPrometheus, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	kind := p.AuthKind
	if kind == "" {
		kind = AuthNone
	}
	out := &store.ClusterPrometheus{ClusterID: clusterID, ClusterName: clusterName, URL: p.URL, AuthKind: kind, CAPEM: string(p.CAPEM)}
	if kind == AuthNone {
		return out, nil
	}
	if s == nil {
		return nil, errors.New("no keyring is configured to seal the Prometheus credentials")
	}
	plain, err := json.Marshal(secret{Token: p.BearerToken, Username: p.Username, Password: p.Password})
	if err != nil {
		return nil, err
	}
	if out.SecretCiphertext, out.KeyID, err = s.Seal(plain, aad(clusterID)); err != nil {
		return nil, err
	}
	return out, nil
}

// Open is the Prometheus config of c, its secret opened by s.
func Open(s Sealer, c *store.ClusterPrometheus) (Prometheus, error) {
	p := Prometheus{URL: c.URL, AuthKind: c.AuthKind}
	if c.CAPEM != "" {
		p.CAPEM = []byte(c.CAPEM)
	}
	if len(c.SecretCiphertext) == 0 {
		return p, nil
	}
	if s == nil {
		return Prometheus{}, fmt.Errorf("the Prometheus of cluster %s has sealed credentials but no keyring is configured", c.ClusterName)
	}
	plain, err := s.Open(c.SecretCiphertext, c.KeyID, aad(c.ClusterID))
	if err != nil {
		return Prometheus{}, fmt.Errorf("opening the Prometheus credentials of cluster %s: %w", c.ClusterName, err)
	}
	var v secret
	if err := json.Unmarshal(plain, &v); err != nil {
		return Prometheus{}, fmt.Errorf("the Prometheus credentials of cluster %s: %w", c.ClusterName, err)
	}
	p.BearerToken, p.Username, p.Password = v.Token, v.Username, v.Password
	return p, nil
}

// Lookup is the Prometheus config of the cluster named clusterName, opened; store.ErrNotFound
// when it has none.
func Lookup(ctx context.Context, exec store.Executor, s Sealer, clusterName string) (Prometheus, error) {
	c, err := exec.ClusterPrometheusGet(ctx, clusterName)
	if err != nil {
		return Prometheus{}, err
	}
	return Open(s, c)
}

// RotateKeys re-seals every cluster's Prometheus secret not sealed by the primary key, and
// returns how many it re-sealed; one that does not open is reported and the others still are.
func RotateKeys(ctx context.Context, st store.Store, s Sealer) (int, error) {
	all, err := st.ClusterPrometheusListSealed(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range all {
		if c.KeyID == s.Primary() {
			continue
		}
		if err := reseal(ctx, st, s, c); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func reseal(ctx context.Context, st store.Store, s Sealer, c *store.ClusterPrometheus) error {
	p, err := Open(s, c)
	if err != nil {
		return err
	}
	return store.WithTx(ctx, st, func(ctx context.Context, tx store.Tx) error {
		cur, err := tx.ClusterPrometheusGet(ctx, c.ClusterName)
		if err != nil {
			return err
		}
		if cur.ClusterID != c.ClusterID || string(cur.SecretCiphertext) != string(c.SecretCiphertext) {
			return nil // changed meanwhile: sealed by the primary key already
		}
		next, err := Seal(s, c.ClusterID, c.ClusterName, p)
		if err != nil {
			return err
		}
		next.UpdatedAt = cur.UpdatedAt
		_, err = tx.ClusterPrometheusSet(ctx, next)
		return err
	})
}
