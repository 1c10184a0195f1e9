package crds

import (
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

// FindApproval returns the approval among list (the recorded approvals of one CRD,
// store.Executor.CRDApprovalList) of exactly the change from the revision with digest from to the
// one with digest to (the first when several), or nil when nobody approved that change. An empty
// from or to never matches.
func FindApproval(list []*store.CRDApproval, from, to string) *store.CRDApproval {
	if from == "" || to == "" {
		return nil
	}
	for _, a := range list {
		if a.FromDigest == from && a.ToDigest == to {
			return a
		}
	}
	return nil
}
