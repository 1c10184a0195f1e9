package catalyst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/registry/access"
)

// gitCredentials reads the Project's repository credentials (uncached); nil without a secretRef.
func gitCredentials(ctx context.Context, c client.Reader, project *catalystv1alpha1.Project) (*gitsource.Credentials, error) {
	ref := project.Spec.Source.SecretRef
	if ref == nil {
		return nil, nil
	}
	secret, err := access.ReadSecret(ctx, c, project.Namespace, ref.Name, "spec.source.secretRef")
	if err != nil {
		return nil, err
	}
	creds, err := gitsource.CredentialsFromSecretData(secret.Data)
	if err != nil {
		return nil, access.Unusable(project.Namespace, ref.Name, "spec.source.secretRef", err)
	}
	return creds, nil
}

// sourceReason turns a gitsource error into a condition reason, and whether a human must act
// (a retry cannot help).
func sourceReason(err error) (reason string, stalled bool) {
	switch {
	case errors.Is(err, errSecret), errors.Is(err, gitsource.ErrInvalidCredentials):
		return catalystv1alpha1.SecretNotFoundReason, true
	case errors.Is(err, gitsource.ErrRepositoryNotFound), errors.Is(err, gitsource.ErrInvalidURL):
		return catalystv1alpha1.RepositoryNotFoundReason, true
	case errors.Is(err, gitsource.ErrAuthenticationRequired), errors.Is(err, gitsource.ErrAuthenticationFailed):
		return catalystv1alpha1.AuthenticationFailedReason, true
	case errors.Is(err, gitsource.ErrBranchNotFound):
		return catalystv1alpha1.BranchNotFoundReason, true
	case errors.Is(err, gitsource.ErrCommitNotFound):
		return catalystv1alpha1.CommitNotFoundReason, true
	case errors.Is(err, gitsource.ErrPathNotFound), errors.Is(err, gitsource.ErrInvalidPath):
		return catalystv1alpha1.DeploymentPathNotFoundReason, true
	case errors.Is(err, gitsource.ErrUnsafeSymlink):
		return catalystv1alpha1.RenderFailedReason, true
	}
	// Timeouts, size bounds, network and server errors: retried with backoff.
	return catalystv1alpha1.SourceUnavailableReason, false
}

// sourceHint says what to do about a source failure.
func sourceHint(reason string) string {
	switch reason {
	case catalystv1alpha1.SecretNotFoundReason:
		return "; create the Secret or fix the Project's spec.source.secretRef"
	case catalystv1alpha1.RepositoryNotFoundReason:
		return "; check the Project's spec.source.repositoryUrl (a private repository needs spec.source.secretRef)"
	case catalystv1alpha1.AuthenticationFailedReason:
		return "; fix the credentials in the Secret named by the Project's spec.source.secretRef"
	case catalystv1alpha1.BranchNotFoundReason:
		return "; push the branch or fix the branch name"
	case catalystv1alpha1.CommitNotFoundReason:
		return "; check spec.source.commitSha (a force-push may have removed it)"
	case catalystv1alpha1.DeploymentPathNotFoundReason:
		return "; fix the Project's spec.deployment.path or add it to the repository"
	}
	return ""
}

// snapshots fetches commits and keeps the last few in memory, so environments at the same
// commit (a branch and its pull request, a redeploy after a Project change, many environments
// created at once) download it once. Concurrent requests for the same commit share one download.
// Entries are keyed by URL, commit and a hash of the credentials: a Project only ever gets a
// commit it could fetch with its own credentials.
type snapshots struct {
	mu      sync.Mutex
	max     int
	entries map[string]*snapshotEntry
	order   []string // least recently used first
	fetch   func(context.Context, gitsource.Options) (*gitsource.Snapshot, error)
}

type snapshotEntry struct {
	done chan struct{}
	snap *gitsource.Snapshot
	err  error
}

func newSnapshots(max int) *snapshots {
	return &snapshots{max: max, entries: map[string]*snapshotEntry{}, fetch: gitsource.Fetch}
}

func snapshotKey(o gitsource.Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", o.URL, o.Commit)
	if c := o.Credentials; c != nil {
		fmt.Fprintf(h, "%s\x00%s\x00%s", c.Username, c.Password, c.BearerToken)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Get returns the snapshot of o.Commit, fetching it unless it is held or being fetched.
// Failures are not kept.
func (c *snapshots) Get(ctx context.Context, o gitsource.Options) (snap *gitsource.Snapshot, cached bool, err error) {
	key := snapshotKey(o)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.touch(key)
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		if e.err == nil {
			return e.snap, true, nil
		}
		// The fetch this call waited for failed; try once more on its own.
		return c.Get(ctx, o)
	}
	e := &snapshotEntry{done: make(chan struct{})}
	c.entries[key] = e
	c.order = append(c.order, key)
	c.mu.Unlock()

	e.snap, e.err = c.fetch(ctx, o)
	close(e.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.err != nil {
		c.drop(key)
		return nil, false, e.err
	}
	for len(c.order) > c.max {
		c.drop(c.order[0])
	}
	return e.snap, false, nil
}

func (c *snapshots) touch(key string) {
	for i, k := range c.order {
		if k == key {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), key)
			return
		}
	}
}

func (c *snapshots) drop(key string) {
	delete(c.entries, key)
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			return
		}
	}
}
