package clusters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// expiredSlack: a token this close to its expiry counts as expired (a call may take that long).
const expiredSlack = 15 * time.Second

// RESTConfig returns a client configuration for the cluster that acts as the manager's
// ServiceAccount (never the registered admin credential), renewing its token first when due.
// Its requests carry the W3C traceparent of their span; those sent without one in their context
// (client-go calls that take none) go out under ctx's span. store.ErrNotFound when the cluster
// is not registered.
func (m *Manager) RESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	cc, err := m.access(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(cc.config)
	telemetry.FollowSpan(ctx, cfg)
	return cfg, nil
}

// Client returns a cached clientset for the cluster, acting as the manager's ServiceAccount; it
// is rebuilt when the stored credentials change (token renewal, key rotation).
func (m *Manager) Client(ctx context.Context, name string) (kubernetes.Interface, error) {
	cc, err := m.access(ctx, name)
	if err != nil {
		return nil, err
	}
	return cc.clientset, nil
}

func (m *Manager) lockFor(name string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.locks[name]
	if !ok {
		l = &sync.Mutex{}
		m.locks[name] = l
	}
	return l
}

// access returns the cluster's client, with a token that has more than half its life left when
// the cluster can be reached: renewed by the ServiceAccount itself past half its life, re-minted
// with the admin kubeconfig once expired.
func (m *Manager) access(ctx context.Context, name string) (*cachedClient, error) {
	lock := m.lockFor(name)
	lock.Lock()
	defer lock.Unlock()
	c, err := m.store.ClusterGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	now := m.now()
	switch {
	case c.TokenExpiresAt == nil || len(c.TokenCiphertext) == 0 || !now.Before(c.TokenExpiresAt.Add(-expiredSlack)):
		if c, err = m.remint(ctx, c); err != nil {
			return nil, err
		}
	case c.TokenExpiresAt.Sub(now) < m.cfg.TokenTTL/2:
		cur, err := m.clientFor(c)
		if err != nil {
			return nil, err
		}
		renewed, err := m.renew(ctx, c, cur)
		switch {
		case err == nil:
			c = renewed
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			// The ServiceAccount or its rights are gone: set it up again.
			if c, err = m.remint(ctx, c); err != nil {
				return nil, err
			}
		default:
			// The token is still valid; the next call tries again.
			m.log.WarnContext(ctx, "clusters: Could not renew the ServiceAccount token; using the current one",
				"cluster", name, "expires", c.TokenExpiresAt, "problem", classify("", "renew the token", err, m.cfg.CheckTimeout).Message)
			return cur, nil
		}
	}
	return m.clientFor(c)
}

// renew asks for a new token with the current one (the ServiceAccount renews itself) and stores it.
func (m *Manager) renew(ctx context.Context, c *store.Cluster, cur *cachedClient) (*store.Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.CheckTimeout)
	defer cancel()
	tok, err := requestToken(ctx, cur.clientset, m.cfg.TokenTTL)
	if err != nil {
		return nil, err
	}
	c, err = m.persist(ctx, c, tok)
	if err != nil {
		return nil, err
	}
	m.log.InfoContext(ctx, "clusters: Renewed the ServiceAccount token", "cluster", c.Name, "expires", tok.expires)
	m.credentialEvent(c.Name, "renewed", tok.expires)
	return c, nil
}

// remint sets the identity up again with the admin kubeconfig (it may have been deleted in the
// cluster) and stores a new token.
func (m *Manager) remint(ctx context.Context, c *store.Cluster) (*store.Cluster, error) {
	kc, err := m.openKubeconfig(c)
	if err != nil {
		return nil, err
	}
	admin, err := kubernetes.NewForConfig(withTimeout(kc.RESTConfig(), m.cfg.ConnectTimeout))
	if err != nil {
		return nil, err
	}
	setupCtx, cancel := context.WithTimeout(ctx, 3*m.cfg.ConnectTimeout)
	defer cancel()
	tok, _, err := setUpIdentity(setupCtx, admin, m.cfg.TokenTTL)
	if err != nil {
		return nil, fmt.Errorf("re-minting the ServiceAccount token with the registered kubeconfig: %w", err)
	}
	if c, err = m.persist(ctx, c, tok); err != nil {
		return nil, err
	}
	m.log.InfoContext(ctx, "clusters: Re-minted the ServiceAccount token with the registered kubeconfig", "cluster", c.Name, "expires", tok.expires)
	m.credentialEvent(c.Name, "reminted", tok.expires)
	return c, nil
}

// persist seals tok (and the kubeconfig again when it was sealed by an older key) under the
// primary key and stores both. The write is not cancelled with ctx: the token was issued.
func (m *Manager) persist(ctx context.Context, c *store.Cluster, tok *token) (*store.Cluster, error) {
	kcCipher, keyID := c.KubeconfigCiphertext, c.KeyID
	if keyID != m.keys.Primary() {
		plain, err := m.open(c, "kubeconfig", c.KubeconfigCiphertext)
		if err != nil {
			return nil, err
		}
		if kcCipher, keyID, err = m.keys.Seal(plain, aad("kubeconfig", c.Name, c.ID)); err != nil {
			return nil, err
		}
	}
	tokCipher, _, err := m.keys.Seal([]byte(tok.value), aad("token", c.Name, c.ID))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	expires := tok.expires
	updated, err := m.store.ClusterUpdateCredentials(ctx, &store.ClusterUpdateCredentialsParams{
		Name: c.Name, KubeconfigCiphertext: kcCipher, TokenCiphertext: tokCipher, TokenExpiresAt: &expires,
		KeyID: keyID, Now: m.now(),
	})
	if err != nil {
		return nil, fmt.Errorf("storing the credentials of cluster %q: %w", c.Name, err)
	}
	return updated, nil
}

// clientFor returns the cached client for c's stored credentials, building it when they changed.
func (m *Manager) clientFor(c *store.Cluster) (*cachedClient, error) {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(c.ID), []byte(c.KeyID), c.KubeconfigCiphertext, c.TokenCiphertext} {
		h.Write([]byte(fmt.Sprintf("%d:", len(part))))
		h.Write(part)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	m.mu.Lock()
	cc, ok := m.clients[c.Name]
	m.mu.Unlock()
	if ok && cc.digest == digest {
		return cc, nil
	}

	kc, err := m.openKubeconfig(c)
	if err != nil {
		return nil, err
	}
	tok, err := m.open(c, "token", c.TokenCiphertext)
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(kc.RESTConfig())
	cfg.BearerToken = string(tok)
	// No client-wide timeout: it would cut watches (Helm's waits in part 2). Calls are bounded
	// by their contexts.
	cfg = withTimeout(cfg, 0)
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: building a client: %w", c.Name, err)
	}
	cc = &cachedClient{digest: digest, config: cfg, clientset: cs}
	if c.TokenExpiresAt != nil {
		cc.expires = *c.TokenExpiresAt
	}
	m.mu.Lock()
	m.clients[c.Name] = cc
	m.mu.Unlock()
	return cc, nil
}

// CredentialsError is a cluster's stored credentials that cannot be opened: a key that is not
// loaded, or a ciphertext that was tampered with. It holds no secret.
type CredentialsError struct {
	Cluster, KeyID, What string
	Err                  error
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("the stored %s of cluster %q cannot be decrypted (key %q): %v", e.What, e.Cluster, e.KeyID, e.Err)
}

func (e *CredentialsError) Unwrap() error { return e.Err }

func (m *Manager) open(c *store.Cluster, what string, ciphertext []byte) ([]byte, error) {
	plain, err := m.keys.Open(ciphertext, c.KeyID, aad(what, c.Name, c.ID))
	if err != nil {
		return nil, &CredentialsError{Cluster: c.Name, KeyID: c.KeyID, What: what, Err: err}
	}
	return plain, nil
}

func (m *Manager) openKubeconfig(c *store.Cluster) (*Kubeconfig, error) {
	plain, err := m.open(c, "kubeconfig", c.KubeconfigCiphertext)
	if err != nil {
		return nil, err
	}
	kc, err := ParseKubeconfig(plain)
	if err != nil {
		return nil, &CredentialsError{Cluster: c.Name, KeyID: c.KeyID, What: "kubeconfig", Err: errors.New("it no longer parses")}
	}
	return kc, nil
}

// RotateKeys re-seals the credentials of every cluster not sealed by the primary key under the
// primary, and returns how many it re-sealed. Afterwards the older keys can be dropped from the
// keyring. A cluster whose credentials do not open is reported in the error, and the others are
// still re-sealed.
func (m *Manager) RotateKeys(ctx context.Context) (int, error) {
	all, err := m.allClusters(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range all {
		if c.KeyID == m.keys.Primary() {
			continue
		}
		ok, err := m.reseal(ctx, c.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			n++
		}
	}
	return n, errors.Join(errs...)
}

func (m *Manager) reseal(ctx context.Context, name string) (bool, error) {
	lock := m.lockFor(name)
	lock.Lock()
	defer lock.Unlock()
	c, err := m.store.ClusterGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil || c.KeyID == m.keys.Primary() {
		return false, err
	}
	kc, err := m.open(c, "kubeconfig", c.KubeconfigCiphertext)
	if err != nil {
		return false, err
	}
	kcCipher, keyID, err := m.keys.Seal(kc, aad("kubeconfig", c.Name, c.ID))
	if err != nil {
		return false, err
	}
	var tokCipher []byte
	if len(c.TokenCiphertext) > 0 {
		tok, err := m.open(c, "token", c.TokenCiphertext)
		if err != nil {
			return false, err
		}
		if tokCipher, _, err = m.keys.Seal(tok, aad("token", c.Name, c.ID)); err != nil {
			return false, err
		}
	}
	if _, err := m.store.ClusterUpdateCredentials(ctx, &store.ClusterUpdateCredentialsParams{
		Name: c.Name, KubeconfigCiphertext: kcCipher, TokenCiphertext: tokCipher, TokenExpiresAt: c.TokenExpiresAt,
		KeyID: keyID, Now: m.now(),
	}); err != nil {
		return false, fmt.Errorf("re-sealing cluster %q: %w", name, err)
	}
	m.log.InfoContext(ctx, "clusters: Re-sealed credentials under the primary key", "cluster", name, "fromKey", c.KeyID, "toKey", keyID)
	return true, nil
}

// allClusters lists every cluster, page by page.
func (m *Manager) allClusters(ctx context.Context) ([]*store.Cluster, error) {
	var all []*store.Cluster
	after := ""
	for {
		page, err := m.store.ClusterList(ctx, &store.ClusterListParams{After: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("listing clusters: %w", err)
		}
		all = append(all, page...)
		if len(page) < store.MaxLimit {
			return all, nil
		}
		after = page[len(page)-1].Name
	}
}
