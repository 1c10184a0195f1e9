package crds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Installed describes a CRD as a cluster has it.
type Installed struct {
	// ServedVersions are the versions the cluster serves, in the definition's order.
	ServedVersions []string
	// StorageVersion is the version new objects are stored in.
	StorageVersion string
	// StoredVersions are the versions objects may still be stored in (status.storedVersions).
	StoredVersions []string
	// SpecDigest is SpecDigest of the cluster's definition.
	SpecDigest string
}

// Describe reads what a cluster's definition of a CRD serves and stores.
func Describe(crd *apiextensionsv1.CustomResourceDefinition) (*Installed, error) {
	out := &Installed{ServedVersions: []string{}, StoredVersions: append([]string{}, crd.Status.StoredVersions...)}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out.ServedVersions = append(out.ServedVersions, v.Name)
		}
		if v.Storage {
			out.StorageVersion = v.Name
		}
	}
	d, err := SpecDigest(crd)
	if err != nil {
		return nil, err
	}
	out.SpecDigest = d
	return out, nil
}

// SpecDigest is the digest of a definition's spec with the API server's defaults applied
// ("sha256:<hex>"): the same for a definition as a chart ships it and as a cluster stores it
// once applied (which adds defaults, metadata and status). It names what a cluster runs among
// the stored revisions, whose digests (Encode) cover the definition as shipped.
func SpecDigest(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	c := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
	b, err := json.Marshal(c.Spec)
	if err != nil {
		return "", fmt.Errorf("encoding the spec of CRD %s: %w", crd.Name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
