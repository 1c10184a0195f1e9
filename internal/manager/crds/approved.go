package crds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Encode is the form in which the manager stores a revision of a CRD as a chart ships it (its
// JSON without status and server-set metadata) and that form's digest, "sha256:<hex>": the
// digests POST /api/v1/crds/{name}/approve records as an approved change's from and to.
func Encode(crd *apiextensionsv1.CustomResourceDefinition) (stored []byte, digest string, err error) {
	c := crd.DeepCopy()
	c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	c.ResourceVersion, c.UID, c.Generation, c.ManagedFields = "", "", 0, nil
	c.CreationTimestamp = metav1.Time{}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, "", fmt.Errorf("encoding CRD %s: %w", crd.Name, err)
	}
	sum := sha256.Sum256(b)
	return b, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Digest is the digest of Encode: what deployment planning compares with approved changes.
func Digest(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	_, d, err := Encode(crd)
	return d, err
}

// ApprovalLister reads the recorded approvals of a CRD's changes (store.Executor has it).
type ApprovalLister interface {
	CRDApprovalList(ctx context.Context, crdName string) ([]*store.CRDApproval, error)
}

// FindApproval returns the approval recorded for exactly the change of CRD name from the
// revision with digest from to the one with digest to (the oldest one when several), or nil
// when nobody approved that change. An empty from or to never matches.
func FindApproval(ctx context.Context, l ApprovalLister, name, from, to string) (*store.CRDApproval, error) {
	if from == "" || to == "" {
		return nil, nil
	}
	list, err := l.CRDApprovalList(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("reading the approvals of CRD %s: %w", name, err)
	}
	for _, a := range list {
		if a.FromDigest == from && a.ToDigest == to {
			return a, nil
		}
	}
	return nil, nil
}
