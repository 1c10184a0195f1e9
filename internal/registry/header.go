package registry

import "strings"

// challenge is one authentication challenge of a WWW-Authenticate header (RFC 7235).
type challenge struct {
	// Scheme is the auth scheme in lower case, e.g. "bearer".
	Scheme string
	// Params are the auth-params with lower-case names, e.g. realm, service, scope.
	Params map[string]string
}

// parseChallenges parses WWW-Authenticate header values into challenges. It is lenient: it
// skips what it cannot parse and never fails, so a hostile header yields at worst no challenge.
func parseChallenges(values []string) []challenge {
	var out []challenge
	for _, v := range values {
		p := headerParser{s: v}
		for {
			p.skip(" \t,")
			if p.done() {
				break
			}
			scheme := p.token()
			if scheme == "" {
				p.i++ // not a token: skip the stray character
				continue
			}
			c := challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
			p.skip(" \t")
			if !p.token68() {
				p.authParams(c.Params)
			}
			out = append(out, c)
		}
	}
	return out
}

// parseLinkNext returns the target of the first link whose relation types include "next" in Link
// header values (RFC 8288), e.g. `</v2/app/tags/list?last=b&n=2>; rel="next"`.
func parseLinkNext(values []string) (string, bool) {
	for _, v := range values {
		p := headerParser{s: v}
		for {
			p.skip(" \t,")
			if p.done() {
				break
			}
			if p.s[p.i] != '<' {
				p.skipElement()
				continue
			}
			end := strings.IndexByte(p.s[p.i:], '>')
			if end < 0 {
				break
			}
			target := strings.TrimSpace(p.s[p.i+1 : p.i+end])
			p.i += end + 1
			next := false
			for {
				p.skip(" \t")
				if p.done() || p.s[p.i] != ';' {
					break
				}
				p.i++
				p.skip(" \t")
				name := strings.ToLower(p.token())
				p.skip(" \t")
				value := ""
				if !p.done() && p.s[p.i] == '=' {
					p.i++
					p.skip(" \t")
					value = p.value()
				}
				if name == "rel" {
					for _, rel := range strings.Fields(value) {
						if strings.EqualFold(rel, "next") {
							next = true
						}
					}
				}
			}
			if next && target != "" && !strings.ContainsAny(target, "<\" \t") {
				return target, true
			}
			p.skipElement()
		}
	}
	return "", false
}

// headerParser walks a header value; every method either consumes input or leaves it unchanged
// and says so, which keeps the loops above finite.
type headerParser struct {
	s string
	i int
}

func (p *headerParser) done() bool { return p.i >= len(p.s) }

func (p *headerParser) skip(chars string) {
	for p.i < len(p.s) && strings.IndexByte(chars, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads an RFC 9110 token and returns "" when none starts here.
func (p *headerParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// value reads a token or a quoted-string (unescaping it); an unterminated quote runs to the end.
func (p *headerParser) value() string {
	if p.done() || p.s[p.i] != '"' {
		return p.token()
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String()
		case c == '\\' && p.i < len(p.s):
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// token68 consumes a token68 credential (as in `Basic dXNlcjpwYXNz`) when one stands here alone,
// that is followed only by spaces and then a comma or the end.
func (p *headerParser) token68() bool {
	j := p.i
	for j < len(p.s) && isToken68Char(p.s[j]) {
		j++
	}
	if j == p.i {
		return false
	}
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	k := j
	for k < len(p.s) && (p.s[k] == ' ' || p.s[k] == '\t') {
		k++
	}
	if k < len(p.s) && p.s[k] != ',' {
		return false
	}
	p.i = j
	return true
}

// authParams reads `name=value` pairs separated by commas into params, stopping (without
// consuming it) at a token that is not followed by "=": the scheme of the next challenge.
func (p *headerParser) authParams(params map[string]string) {
	for {
		p.skip(" \t,")
		start := p.i
		name := p.token()
		p.skip(" \t")
		if name == "" || p.done() || p.s[p.i] != '=' {
			p.i = start
			return
		}
		p.i++
		p.skip(" \t")
		key := strings.ToLower(name)
		v := p.value()
		if _, seen := params[key]; !seen {
			params[key] = v
		}
	}
}

// skipElement moves past the current list element: to just after the next comma outside a
// quoted string or angle brackets, or to the end.
func (p *headerParser) skipElement() {
	inQuote, inAngle := false, false
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case inQuote && c == '\\':
			p.i++
		case c == '"' && !inAngle:
			inQuote = !inQuote
		case c == '<' && !inQuote:
			inAngle = true
		case c == '>' && !inQuote:
			inAngle = false
		case c == ',' && !inQuote && !inAngle:
			return
		}
	}
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}
