package auth

import (
	"context"
	"errors"
	"net/http/httptest"
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
	for in, want := range map[string][2]string{
		"Admin":                       {"Admin", ""},
		" viewer ":                    {"Viewer", ""},
		"OPERATOR":                    {"Operator", ""},
		"EnvironmentOwner:production": {"EnvironmentOwner", "Production"},
		"environmentowner:Dev":        {"EnvironmentOwner", "Dev"},
	} {
		r, env, err := ParseRole(in)
		if err != nil || string(r) != want[0] || env != want[1] {
			t.Errorf("ParseRole(%q) = %q, %q, %v; want %v", in, r, env, err, want)
		}
	}
	for _, in := range []string{"", "Root", "Admin:Dev", "EnvironmentOwner", "EnvironmentOwner:Moon"} {
		if _, _, err := ParseRole(in); err == nil {
			t.Errorf("ParseRole(%q) accepted", in)
		}
	}
}
