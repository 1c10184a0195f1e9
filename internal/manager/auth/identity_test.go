package auth

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIdentity(t *testing.T) {
	id := &Identity{Subject: "bob"}
	id.addRole(Operator, "")
	id.addRole(EnvironmentOwner, "Staging")
	id.addRole(EnvironmentOwner, "Staging")
	id.addRole(EnvironmentOwner, "Dev")
	if got := id.String(); got != "bob [Operator EnvironmentOwner] owns [Staging Dev]" {
		t.Fatalf("String() = %q", got)
	}
	if !id.Has(Admin, Operator) || id.Has(Admin) || id.Has() {
		t.Fatalf("Has wrong for %v", id)
	}
	if !id.OwnsEnvironment("staging") || !id.OwnsEnvironment("Dev") || id.OwnsEnvironment("Production") {
		t.Fatalf("OwnsEnvironment wrong for %v", id)
	}
	var none *Identity
	if none.Has(Viewer) || none.OwnsEnvironment("Dev") || none.String() != "<anonymous>" {
		t.Fatal("nil identity must hold nothing")
	}

	ctx := context.Background()
	if _, ok := IdentityFrom(ctx); ok {
		t.Fatal("identity in an empty context")
	}
	got, ok := IdentityFrom(WithIdentity(ctx, id))
	if !ok || got != id {
		t.Fatalf("IdentityFrom = %v, %v", got, ok)
	}
}

func TestFromRequest(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   string
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi"},
		{"bearer abc.def.ghi", "abc.def.ghi"},
		{"BEARER   abc.def.ghi  ", "abc.def.ghi"},
		{"", ""},
		{"Bearer", ""},
		{"Bearer ", ""},
		{"Basic dXNlcjpwYXNz", ""},
		{"Bearer a b", ""},
		{"abc.def.ghi", ""},
	} {
		r := httptest.NewRequest("GET", "/api/v1/clusters", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		got, err := FromRequest(r)
		if tc.want == "" {
			if !errors.Is(err, ErrNoToken) {
				t.Errorf("%q: got %q, %v; want ErrNoToken", tc.header, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.header, got, err, tc.want)
		}
	}
}

func TestParseRole(t *testing.T) {
	for in, want := range map[string]Role{
		"Admin":                       Admin,
		" viewer ":                    Viewer,
		"OPERATOR":                    Operator,
		"EnvironmentOwner:production": "EnvironmentOwner:Production",
		"environmentowner:Dev":        "EnvironmentOwner:Dev",
	} {
		r, err := ParseRole(in)
		if err != nil || r != want {
			t.Errorf("ParseRole(%q) = %q, %v; want %q", in, r, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                      "unknown role",
		"Root":                  "unknown role",
		"Admin:Dev":             "only EnvironmentOwner takes an environment",
		"EnvironmentOwner":      "needs an environment",
		"EnvironmentOwner:Moon": "unknown environment",
	} {
		if _, err := ParseRole(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRole(%q) = %v, want an error mentioning %q", in, err, want)
		}
	}
}
