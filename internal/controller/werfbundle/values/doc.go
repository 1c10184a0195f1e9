// Package values builds the Helm values a WerfBundle converges with from the ConfigMaps and
// Secrets listed in spec.converge.valuesFrom. It owns reading one source into a values map
// (FromSource), layering the sources with Helm's merge rules (Merge), and rendering the result
// as deterministic YAML with a content hash (Render), so that equal values always give the same
// hash and a change of any source shows as a change of hash.
//
// It does not fetch sources from the API server, decide which sources are optional, or log.
// Values may be secrets: no error of this package contains a value, only the identity of the
// source (kind, namespace, name, key) and the kind and line of a YAML error.
//
// YAML is read as sigs.k8s.io/yaml reads it (YAML 1.1 scalars, so an unquoted yes is true;
// duplicate keys are allowed and the last wins, as in Helm), except that numbers are decoded as
// json.Number, so an integer beyond 2^53 keeps every digit and 1000000 renders as 1000000 rather
// than 1e+06; that a text holding more than one YAML document is rejected instead of silently
// losing all but the first; and that a NaN or infinite number is rejected, having no JSON form.
//
// Everything FromSource accepts renders, and renders to YAML that reads back as the same values.
// To keep that promise and keep rendering cheap it also rejects values nested deeper than
// MaxDepth (rendered YAML grows with the square of the depth), mapping keys too long for a YAML
// implicit key, and a literal "<<" key (go-yaml would write it as a merge key). Characters YAML
// cannot carry raw (DEL, C1 controls, U+FFFE, U+FFFF) are written as escapes.
package values
