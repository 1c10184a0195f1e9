package receiver

import "strings"

// dockerHubHosts are the names under which Docker Hub appears in references and notifications;
// all of them fold into docker.io.
var dockerHubHosts = map[string]bool{
	"docker.io":               true,
	"index.docker.io":         true,
	"registry-1.docker.io":    true,
	"registry.hub.docker.com": true,
}

// NormalizeRepository reduces a repository reference to the form push notifications are matched
// on: host[:port]/path, with a lower-case host and no scheme, credentials, trailing slash, tag or
// digest. Docker Hub names get their implied parts ("nginx" is docker.io/library/nginx, "org/app"
// is docker.io/org/app, index.docker.io is docker.io). As in Docker's reference grammar, the first
// path element is a host when it contains '.' or ':' or is "localhost".
//
// It returns "" for anything that names no repository: an empty string, a bare host, or a
// reference with characters a repository name cannot hold. NormalizeRepository is idempotent, and
// the controller applies it to spec.registry.url so both sides of a match agree.
func NormalizeRepository(s string) string {
	s = strings.TrimSpace(s)
	hadScheme := false
	for _, scheme := range []string{"https://", "http://", "oci://"} {
		if len(s) >= len(scheme) && strings.EqualFold(s[:len(scheme)], scheme) {
			s, hadScheme = s[len(scheme):], true
			break
		}
	}
	if hadScheme {
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
	}
	s = strings.Trim(s, "/")

	first, rest, hasPath := strings.Cut(s, "/")
	if hasPath {
		// An '@' before the first slash is userinfo of a URL; after it, a digest.
		if i := strings.LastIndexByte(first, '@'); i >= 0 {
			first = first[i+1:]
		}
		rest, _, _ = strings.Cut(rest, "@")
	} else {
		first, _, _ = strings.Cut(first, "@")
	}

	var host, path string
	switch {
	case !hasPath:
		name, _, _ := strings.Cut(first, ":")
		if looksLikeHost(name) {
			return "" // a registry without a repository
		}
		host, path = "docker.io", name
	case looksLikeHost(first):
		host, path = strings.ToLower(first), rest
	default:
		host, path = "docker.io", first+"/"+rest
	}

	var kept []string
	for seg := range strings.SplitSeq(path, "/") {
		if seg != "" {
			kept = append(kept, seg)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	// Drop the tag, which can only sit in the last path element.
	last := len(kept) - 1
	if kept[last], _, _ = strings.Cut(kept[last], ":"); kept[last] == "" {
		kept = kept[:last]
	}
	if dockerHubHosts[host] {
		host = "docker.io"
		if len(kept) == 1 {
			kept = []string{"library", kept[0]}
		}
	}
	if len(kept) == 0 || !validHost(host) {
		return ""
	}
	for _, seg := range kept {
		if !validPathSegment(seg) {
			return ""
		}
	}
	return host + "/" + strings.Join(kept, "/")
}

// looksLikeHost reports whether the first element of a reference names a registry host.
func looksLikeHost(s string) bool {
	return strings.ContainsAny(s, ".:") || strings.EqualFold(s, "localhost")
}

// validHost accepts a lower-case host name or IP literal with an optional port.
func validHost(h string) bool {
	if h == "" || h[0] == ':' || h[0] == '.' || h[0] == '-' {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// validPathSegment accepts the characters of a repository path component. Registries are stricter
// (lower-case only, no leading separator); this only keeps out what would make matching ambiguous.
func validPathSegment(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// validTag reports whether s is a tag as the OCI distribution spec defines it:
// [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}.
func validTag(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}
