package registry

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLinkNext(t *testing.T) {
	tests := map[string]struct {
		values []string
		want   string
		ok     bool
	}{
		"distribution":      {[]string{`</v2/app/tags/list?last=b&n=2>; rel="next"`}, "/v2/app/tags/list?last=b&n=2", true},
		"unquoted rel":      {[]string{`</next>; rel=next`}, "/next", true},
		"case":              {[]string{`</next>; REL="Next"`}, "/next", true},
		"several relations": {[]string{`</next>; rel="last next"`}, "/next", true},
		"prev first":        {[]string{`</prev>; rel="prev", </next>; rel="next"`}, "/next", true},
		"separate headers":  {[]string{`</prev>; rel="prev"`, `</next>; rel="next"`}, "/next", true},
		"other params":      {[]string{`</next>; title="a, b; c"; rel="next"`}, "/next", true},
		"absolute":          {[]string{`<https://r.example/v2/a/tags/list?last=x>;rel="next"`}, "https://r.example/v2/a/tags/list?last=x", true},
		"comma in target":   {[]string{`</a?x=1,2>; rel="next"`}, "/a?x=1,2", true},
		"no next":           {[]string{`</prev>; rel="prev"`}, "", false},
		"no rel":            {[]string{`</next>`}, "", false},
		"empty target":      {[]string{`<>; rel="next"`}, "", false},
		"unterminated":      {[]string{`</next; rel="next"`}, "", false},
		"garbage then link": {[]string{`garbage "x, y", </next>; rel="next"`}, "/next", true},
		"empty":             {nil, "", false},
		"next as a title":   {[]string{`</x>; title="next"`}, "", false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := parseLinkNext(tt.values)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseLinkNext(%q) = %q, %v; want %q, %v", tt.values, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseChallenges(t *testing.T) {
	tests := map[string]struct {
		values []string
		want   []challenge
	}{
		"docker hub": {
			[]string{`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"`},
			[]challenge{{"bearer", map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/nginx:pull"}}},
		},
		"comma in scope": {
			[]string{`Bearer realm="r", scope="repository:a:pull,push"`},
			[]challenge{{"bearer", map[string]string{"realm": "r", "scope": "repository:a:pull,push"}}},
		},
		"basic": {
			[]string{`Basic realm="Registry Realm"`},
			[]challenge{{"basic", map[string]string{"realm": "Registry Realm"}}},
		},
		"two in one header": {
			[]string{`Basic realm="a", Bearer realm="b",service=s`},
			[]challenge{{"basic", map[string]string{"realm": "a"}}, {"bearer", map[string]string{"realm": "b", "service": "s"}}},
		},
		"two headers": {
			[]string{`Negotiate`, `Bearer realm=b`},
			[]challenge{{"negotiate", map[string]string{}}, {"bearer", map[string]string{"realm": "b"}}},
		},
		"token68": {
			[]string{`Negotiate dG9rZW4=, Basic realm=x`},
			[]challenge{{"negotiate", map[string]string{}}, {"basic", map[string]string{"realm": "x"}}},
		},
		"escapes and case": {
			[]string{`BEARER Realm="a\"b\\c"`},
			[]challenge{{"bearer", map[string]string{"realm": `a"b\c`}}},
		},
		"spaces around equals": {
			[]string{`Bearer realm = "r" , service = s`},
			[]challenge{{"bearer", map[string]string{"realm": "r", "service": "s"}}},
		},
		"first value wins": {
			[]string{`Bearer realm="a",realm="b"`},
			[]challenge{{"bearer", map[string]string{"realm": "a"}}},
		},
		"unterminated quote": {
			[]string{`Bearer realm="abc`},
			[]challenge{{"bearer", map[string]string{"realm": "abc"}}},
		},
		"empty":   {[]string{""}, nil},
		"garbage": {[]string{`"=,;`}, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := parseChallenges(tt.values); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseChallenges(%q) =\n%#v\nwant\n%#v", tt.values, got, tt.want)
			}
		})
	}
}

// FuzzParseLink checks that any Link header parses without panicking or looping, and that a
// found target is non-empty and free of the characters that delimit it.
func FuzzParseLink(f *testing.F) {
	f.Add(`</v2/app/tags/list?last=b&n=2>; rel="next"`)
	f.Add(`</prev>; rel="prev", </next>; rel=next`)
	f.Add(`<`)
	f.Add(`garbage "x, y", </next>; title="a;b"; rel="last next"`)
	f.Fuzz(func(t *testing.T, value string) {
		target, ok := parseLinkNext(strings.Split(value, "\n"))
		if ok && (target == "" || strings.ContainsAny(target, "<>")) {
			t.Errorf("parseLinkNext(%q) = %q", value, target)
		}
		if !ok && target != "" {
			t.Errorf("parseLinkNext(%q) returned %q without ok", value, target)
		}
	})
}

// FuzzParseChallenges checks that any WWW-Authenticate header parses without panicking or
// looping, into lower-case schemes and parameter names that are tokens.
func FuzzParseChallenges(f *testing.F) {
	f.Add(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"`)
	f.Add(`Basic realm="a", Bearer realm="b",service=s`)
	f.Add(`Negotiate dG9rZW4=, Basic realm=x`)
	f.Add(`Bearer realm="a\"b\\c`)
	f.Fuzz(func(t *testing.T, value string) {
		for _, c := range parseChallenges(strings.Split(value, "\n")) {
			if c.Scheme == "" || c.Scheme != strings.ToLower(c.Scheme) {
				t.Errorf("parseChallenges(%q): scheme %q", value, c.Scheme)
			}
			for k := range c.Params {
				if k == "" || k != strings.ToLower(k) || strings.ContainsAny(k, ` ",=`) {
					t.Errorf("parseChallenges(%q): parameter name %q", value, k)
				}
			}
		}
	})
}
