package access

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrSecret matches every error about a referenced Secret that a human must fix: it does not
// exist, lacks a key, or holds nothing usable.
var ErrSecret = errors.New("unusable Secret")

// SecretError is an error about a referenced Secret. Its message is complete on its own (it
// names the Secret and the field that refers to it); it matches ErrSecret.
type SecretError struct {
	msg string
	err error
}

func (e *SecretError) Error() string        { return e.msg }
func (e *SecretError) Unwrap() error        { return e.err }
func (e *SecretError) Is(target error) bool { return target == ErrSecret }

// Invalid is a SecretError for the Secret named in field whose content err (which names the
// Secret, as registry.CredentialsFromSecret's errors do) says is wrong.
func Invalid(field string, err error) error {
	return &SecretError{msg: field + ": " + err.Error(), err: err}
}

// Unusable is a SecretError for the Secret namespace/name, named in field (e.g.
// "spec.source.secretRef"), whose content err says is wrong.
func Unusable(namespace, name, field string, err error) error {
	return &SecretError{msg: fmt.Sprintf("Secret %s/%s named in %s: %v", namespace, name, field, err), err: err}
}

// ReadSecret reads the Secret namespace/name, named in field, through reader (the API server:
// Secrets are not cached). A missing Secret is a SecretError; other failures are returned
// wrapped, to be retried.
func ReadSecret(ctx context.Context, reader client.Reader, namespace, name, field string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &SecretError{msg: fmt.Sprintf("Secret %s/%s named in %s does not exist", namespace, name, field)}
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return secret, nil
}
