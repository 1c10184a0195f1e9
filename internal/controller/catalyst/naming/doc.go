// Package naming derives the names, labels and host names of Catalyst preview environments. It is
// pure: the same inputs always give the same outputs, and nothing here talks to the API server.
//
// # Namespaces
//
// An environment's namespace is <team>-<project>-<environment> (NamespaceName); the project's
// own namespace, where its Environments live, is <team>-<project> (ProjectNamespaceName). Each
// part is normalised first (Normalize):
//
//   - ASCII letters are lowercased;
//   - every run of other bytes that are not a-z or 0-9 (dots, underscores, slashes, spaces,
//     non-ASCII, '-' itself) becomes a single '-';
//   - leading and trailing '-' are dropped;
//   - a part that is empty after that becomes "x".
//
// So "My_Team", "my.team" and "my--team" all normalise to "my-team", and a normalised part never
// holds "--". The parts are joined with '-' into the full name (FullName). When the full name
// has at most 63 characters it is the namespace name as it is, e.g. my-team-my-project-pr-123.
//
// When it is longer, it is shortened (Shorten) to its first 45 characters (without a trailing
// '-'), then "--", then the first 16 hex digits of the SHA-256 of the full name. Team
// a-very-long-team-name, project with-a-very-long-project-name-and, environment pr-12345 (64
// characters in full) get:
//
//	a-very-long-team-name-with-a-very-long-projec--08b52a15945f26d0
//
// Anyone can recompute the suffix: printf %s "$FULL" | sha256sum | cut -c1-16.
//
// # What "different inputs, different names" means
//
// Two inputs get the same namespace name exactly when their full names are equal; the full name
// is the identity. This holds because
//
//   - names of at most 63 characters are the full name itself and never contain "--";
//   - shortened names always contain "--", so a short name never equals a shortened one;
//   - two shortened names are equal only if the SHA-256 prefixes of two different full names
//     collide. 16 hex digits are 64 bits: an accidental collision among a million long names that
//     share the same 45-character prefix has a probability below 1e-7, and finding one on purpose
//     takes about 2^64 hashes. 10 digits (40 bits) would be within reach of a determined tenant.
//
// Inputs that differ only in what normalisation removes ("My_Project" and "my-project") get the
// same name on purpose: namespace names cannot tell them apart. And because the parts themselves
// may contain '-', the full name does not say where one part ends: team "a-b" with project "c"
// and team "a" with project "b-c" share the full name "a-b-c-…", and the project namespace of
// project "b-c" equals the environment namespace of environment "c" of project "b". No naming
// scheme of the form <team>-<project>-<environment> can avoid that. The controller therefore
// labels every namespace it creates (Labels) and never adopts, changes or deletes a namespace
// whose labels name another environment (MatchesEnvironment): a clash is reported, never acted on.
//
// # Labels and annotations
//
// Namespaces carry catalyst.dev/team, catalyst.dev/project, catalyst.dev/environment and
// catalyst.dev/branch labels. Label values must be at most 63 characters of A-Z, a-z, 0-9, '-',
// '_' and '.', starting and ending with a letter or digit, and branch names contain '/', so
// LabelValue sanitises: every other byte becomes '-', leading and trailing non-alphanumerics are
// dropped, and a value longer than 63 characters is cut to 46 and followed by '-' and 16 hex
// digits of the SHA-256 of the raw value. Valid label values are left as they are. The raw branch
// is kept in the catalyst.dev/branch annotation.
//
// # Host names
//
// An environment is served at <environment>.<preview domain> (IngressHost). The environment part
// is one DNS label (normalised and shortened like a namespace name), so a wildcard certificate for
// *.<preview domain> covers every environment.
package naming
