package approvals

import (
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func TestMayDecide(t *testing.T) {
	admin := &auth.Identity{Subject: "ada", Roles: []auth.Role{auth.Admin}}
	owner := &auth.Identity{Subject: "olga", Roles: []auth.Role{auth.Operator, auth.EnvironmentOwner}, Environments: []string{"Production"}}
	devOwner := &auth.Identity{Subject: "dan", Roles: []auth.Role{auth.EnvironmentOwner}, Environments: []string{"Dev", "Staging"}}
	operator := &auth.Identity{Subject: "otto", Roles: []auth.Role{auth.Operator}}
	viewer := &auth.Identity{Subject: "vic"}

	upgrade := Requirement{Kind: KindVersionUpgrade, RequiredRole: RoleAdmin, Count: 1}
	crd := Requirement{Kind: KindBreakingCRD, RequiredRole: RoleAdmin, Count: 1}
	production := Requirement{Kind: KindProduction, RequiredRole: RoleProductionOwner, Count: 2}
	unknown := Requirement{Kind: "moon", RequiredRole: "EnvironmentOwner:Moon", Count: 1}

	for _, tc := range []struct {
		name        string
		id          *auth.Identity
		req         Requirement
		requestedBy string
		reason      string // "" when allowed
		message     string // a part of the message
	}{
		{"admin approves an upgrade", admin, upgrade, "otto", "", ""},
		{"admin approves a breaking CRD change", admin, crd, "otto", "", ""},
		{"admin approves Production", admin, production, "otto", "", ""},
		{"Production owner approves Production", owner, production, "otto", "", ""},
		{"Production owner is no Admin", owner, upgrade, "otto", ReasonRole,
			"the versionUpgrade approval needs the Admin role; olga has [Operator EnvironmentOwner:Production]"},
		{"Production owner and breaking CRD", owner, crd, "otto", ReasonRole, "needs the Admin role"},
		{"owner of other environments", devOwner, production, "otto", ReasonRole,
			"the production approval needs EnvironmentOwner:Production or Admin; dan has [EnvironmentOwner:Dev EnvironmentOwner:Staging]"},
		{"operator", operator, production, "ada", ReasonRole, "otto has [Operator]"},
		{"no role at all", viewer, upgrade, "ada", ReasonRole, "vic has no role"},
		{"admin's own request", admin, upgrade, "ada", ReasonOwnRequest, "ada requested this deployment and cannot approve or reject its own request"},
		{"own request, other case and spaces", admin, production, " ADA ", ReasonOwnRequest, "cannot approve"},
		{"owner's own Production request", owner, production, "olga", ReasonOwnRequest, "another person must decide"},
		{"nil identity", nil, upgrade, "otto", ReasonUnauthenticated, "authenticated"},
		{"identity without subject", &auth.Identity{Roles: []auth.Role{auth.Admin}}, upgrade, "", ReasonUnauthenticated, "authenticated"},
		{"unknown role fails closed", admin, unknown, "otto", ReasonUnknownRole, `needs the role "EnvironmentOwner:Moon", which this manager does not know`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MayDecide(tc.id, tc.req, tc.requestedBy)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var denied *DeniedError
			if !errors.As(err, &denied) || !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("error %v, want a *DeniedError", err)
			}
			if denied.Reason != tc.reason || denied.Kind != tc.req.Kind {
				t.Errorf("reason %q kind %q, want %q %q", denied.Reason, denied.Kind, tc.reason, tc.req.Kind)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q does not say %q", err.Error(), tc.message)
			}
		})
	}
}

func TestMayDecideApproval(t *testing.T) {
	a := &store.Approval{Kind: KindProduction, RequiredRole: RoleProductionOwner, Required: 1, RequestedBy: "otto"}
	owner := &auth.Identity{Subject: "olga", Roles: []auth.Role{auth.EnvironmentOwner}, Environments: []string{"production"}}
	if err := MayDecideApproval(owner, a); err != nil {
		t.Fatalf("owner (environment in lower case) refused: %v", err)
	}
	a.RequestedBy = "olga"
	if err := MayDecideApproval(owner, a); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("own request: %v", err)
	}
}
