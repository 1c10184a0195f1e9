// Package clusters is the manager's side of registered Kubernetes clusters: the keyring that
// seals their credentials (AES-256-GCM with key ids), kubeconfig validation, connectivity checks,
// the manager's own ServiceAccount in each cluster and its short-lived tokens, a client cache and
// the periodic health loop.
package clusters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Config configures a Manager. Store and Keyring are required; the rest have defaults.
type Config struct {
	Store   store.Store
	Keyring *Keyring
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock (default time.Now); tests move it to age tokens.
	Now func() time.Time
	// ConnectTimeout bounds registration's connectivity check and each step of the identity's
	// setup (default 10 s); CheckTimeout bounds a health check (default 10 s).
	ConnectTimeout, CheckTimeout time.Duration
	// TokenTTL is the life of the ServiceAccount tokens requested (default 1 h, at least 10 min,
	// the API server's minimum).
	TokenTTL time.Duration
	// HealthInterval is the time between two health rounds (default 60 s); HealthConcurrency how
	// many clusters a round checks at once (default 10).
	HealthInterval    time.Duration
	HealthConcurrency int
	// OnRound, when set, is called after each health round of the loop (for metrics).
	OnRound func(Round)
	// OnCredential, when set, is called when a cluster's token is minted, renewed or re-minted.
	OnCredential func(CredentialEvent)
	// HealthHook, when set, learns each recorded health check in the transaction that stores it.
	HealthHook HealthHook
}

// CredentialEvent says how a cluster's ServiceAccount token was obtained.
type CredentialEvent struct {
	Cluster string
	// Kind is "minted" (registration, admin kubeconfig), "renewed" (the ServiceAccount renewed its
	// own token past half its life) or "reminted" (the token had expired: admin kubeconfig again).
	Kind    string
	Expires time.Time
}

// Manager registers clusters, keeps their credentials sealed in the store, hands out clients that
// act as the manager's ServiceAccount, and runs the health loop (Start/Stop).
type Manager struct {
	cfg   Config
	store store.Store
	keys  *Keyring
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	locks   map[string]*sync.Mutex // per cluster: one credential refresh at a time
	clients map[string]*cachedClient

	loop loopState
}

// cachedClient is a client for one cluster's ServiceAccount, valid while the stored credentials
// have digest.
type cachedClient struct {
	digest    string
	config    *rest.Config
	clientset *kubernetes.Clientset
	expires   time.Time
}

// New checks cfg and returns a Manager; its health loop runs after Start.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Keyring == nil {
		return nil, errors.New("clusters: Store and Keyring are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = DefaultConnectTimeout
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.TokenTTL < 10*time.Minute {
		return nil, fmt.Errorf("clusters: TokenTTL %s is below the API server's minimum of 10m", cfg.TokenTTL)
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 60 * time.Second
	}
	if cfg.HealthConcurrency <= 0 {
		cfg.HealthConcurrency = 10
	}
	return &Manager{
		cfg: cfg, store: cfg.Store, keys: cfg.Keyring, log: cfg.Logger, now: cfg.Now,
		locks: map[string]*sync.Mutex{}, clients: map[string]*cachedClient{},
	}, nil
}

// RegisterParams is a cluster to register.
type RegisterParams struct {
	Name        string
	Environment store.Environment
	// Kubeconfig is the kubeconfig's YAML text: an admin credential, used to set up the
	// manager's own ServiceAccount and not for day-to-day work.
	Kubeconfig []byte
}

// Register validates p, checks the name is free (store.ErrAlreadyExists before any contact with
// the cluster), connects (version and an authorized call), sets up the manager's identity in the
// cluster, seals the kubeconfig and the first token and stores the cluster as Healthy. Bad input,
// an unreachable cluster and refused credentials are *invalid.Error; nothing is stored on failure,
// and what this call created in the cluster is deleted again.
func (m *Manager) Register(ctx context.Context, p RegisterParams) (*store.Cluster, error) {
	if err := ValidateName(p.Name); err != nil {
		return nil, err
	}
	if !p.Environment.Valid() {
		return nil, &invalid.Error{Field: "environment", Reason: "invalid", Message: "must be one of " + environmentList()}
	}
	kc, err := ParseKubeconfig(p.Kubeconfig)
	if err != nil {
		return nil, err
	}
	switch _, err := m.store.ClusterGetByName(ctx, p.Name); {
	case err == nil:
		return nil, fmt.Errorf("cluster %q: %w", p.Name, store.ErrAlreadyExists)
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("looking up cluster %q: %w", p.Name, err)
	}

	info, err := connect(ctx, p.Name, kc.RESTConfig(), m.cfg.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	admin, err := kubernetes.NewForConfig(withTimeout(kc.RESTConfig(), m.cfg.ConnectTimeout))
	if err != nil {
		return nil, kubeconfigError("format", "does not give a usable client configuration")
	}
	setupCtx, cancel := context.WithTimeout(ctx, 3*m.cfg.ConnectTimeout)
	defer cancel()
	tok, undo, err := setUpIdentity(setupCtx, admin, m.cfg.TokenTTL)
	if err != nil {
		return nil, err
	}
	c, err := m.create(ctx, p, kc, info, tok)
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.ConnectTimeout)
		defer cancel()
		if !errors.Is(err, store.ErrAlreadyExists) { // a racing registration may own these objects
			undo(cleanup)
		}
		return nil, err
	}
	m.log.InfoContext(ctx, "clusters: Registered cluster", "cluster", c.Name, "environment", c.Environment,
		"kubernetesVersion", c.KubernetesVersion, "tokenExpires", tok.expires)
	m.credentialEvent(c.Name, "minted", tok.expires)
	return c, nil
}

func (m *Manager) create(ctx context.Context, p RegisterParams, kc *Kubeconfig, info *ClusterInfo, tok *token) (*store.Cluster, error) {
	id := uuid.NewString()
	kcCipher, keyID, err := m.keys.Seal(kc.Minified, aad("kubeconfig", p.Name, id))
	if err != nil {
		return nil, err
	}
	tokCipher, _, err := m.keys.Seal([]byte(tok.value), aad("token", p.Name, id))
	if err != nil {
		return nil, err
	}
	now := m.now()
	c, err := m.store.ClusterCreate(ctx, &store.ClusterCreateParams{
		ID: id, Name: p.Name, Environment: p.Environment, KubernetesVersion: info.KubernetesVersion,
		Health: store.HealthHealthy, HealthCheckedAt: &now,
		KubeconfigCiphertext: kcCipher, TokenCiphertext: tokCipher, TokenExpiresAt: &tok.expires, KeyID: keyID, Now: now,
	})
	if err != nil {
		return nil, fmt.Errorf("storing cluster %q: %w", p.Name, err)
	}
	return c, nil
}

// aad is the additional data a credential is sealed for: its kind and its cluster's name and id,
// so that a ciphertext moved to another cluster's row, or from the kubeconfig column to the token
// column, does not open.
func aad(kind, name, id string) []byte {
	return []byte("slipway-manager/v1/" + kind + "/" + name + "/" + id)
}

// ValidateName checks a cluster name: a DNS-1123 label (lower-case alphanumerics and '-', at
// most 63). Errors are *invalid.Error on field "name".
func ValidateName(name string) error {
	if name == "" {
		return &invalid.Error{Field: "name", Reason: "required", Message: "is required"}
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return &invalid.Error{Field: "name", Reason: "invalid", Message: strings.Join(errs, "; ")}
	}
	return nil
}

func environmentList() string {
	names := make([]string, len(store.Environments))
	for i, e := range store.Environments {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// Removal reports what Remove did in the cluster.
type Removal struct {
	// CleanedUp is true when the manager's objects were deleted from the cluster (or were gone).
	CleanedUp bool
	// Problem says why they were not (no secret in it); empty when CleanedUp.
	Problem string
}

// Remove deletes the cluster from the store and, best effort, what the manager created in it
// (its namespace, ServiceAccount, roles and bindings), with the admin kubeconfig. A cluster that
// cannot be reached or cleaned is still removed; the Removal says so. store.ErrNotFound when the
// cluster is not registered.
func (m *Manager) Remove(ctx context.Context, name string) (*Removal, error) {
	c, err := m.store.ClusterGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	r := &Removal{CleanedUp: true}
	if err := m.cleanUp(ctx, c); err != nil {
		r.CleanedUp, r.Problem = false, err.Error()
		m.log.WarnContext(ctx, "clusters: Could not delete the manager's objects from a removed cluster",
			"cluster", name, "problem", r.Problem)
	}
	if err := m.store.ClusterDelete(ctx, name); err != nil {
		return nil, err
	}
	m.forget(name)
	m.log.InfoContext(ctx, "clusters: Removed cluster", "cluster", name, "cleanedUp", r.CleanedUp)
	return r, nil
}

// Delete is Remove for callers that need only the error: a failed clean-up is logged, not
// returned.
func (m *Manager) Delete(ctx context.Context, name string) error {
	_, err := m.Remove(ctx, name)
	return err
}

func (m *Manager) cleanUp(ctx context.Context, c *store.Cluster) error {
	kc, err := m.openKubeconfig(c)
	if err != nil {
		return err
	}
	admin, err := kubernetes.NewForConfig(withTimeout(kc.RESTConfig(), m.cfg.ConnectTimeout))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*m.cfg.ConnectTimeout)
	defer cancel()
	return removeIdentity(ctx, admin)
}

func (m *Manager) forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.clients, name)
	delete(m.locks, name)
}

func (m *Manager) credentialEvent(name, kind string, expires time.Time) {
	if m.cfg.OnCredential != nil {
		m.cfg.OnCredential(CredentialEvent{Cluster: name, Kind: kind, Expires: expires})
	}
}

// Keyring is the keyring the manager seals credentials with; the API seals operators' chart
// source credentials with it too.
func (m *Manager) Keyring() *Keyring { return m.keys }
