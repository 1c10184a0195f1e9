// Package access is what a controller needs to reach the registry one of its objects names: it
// reads the credentials and CA Secrets the object refers to (through the API server: the
// controllers do not cache Secrets) into registry.Options, renders the credentials as a docker
// config.json for a Job, and keeps one registry.Client per set of settings so connections and
// bearer tokens are shared between objects.
//
// Errors about a Secret (missing, without the key it needs, holding no usable value) match
// ErrSecret and name the Secret, the field that refers to it and the key; they never contain a
// value. Such an error needs a human; any other error (the API server failing) is transient.
//
// WerfBundle (spec.registry.secretRef, spec.registry.certSecretRef) and Catalyst
// (spec.registry.secretRef of a Project) both use it.
package access
