package approvals

import (
	"errors"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// ErrNotAllowed is what every refusal of MayDecide matches (errors.Is): the API answers 403.
var ErrNotAllowed = errors.New("not allowed to decide this approval")

// Reasons a decision is refused (DeniedError.Reason).
const (
	ReasonUnauthenticated = "unauthenticated"
	ReasonOwnRequest      = "ownRequest"
	ReasonRole            = "role"
	ReasonUnknownRole     = "unknownRole"
)

// DeniedError is a refused decision. Message is for people and safe to return.
type DeniedError struct {
	Actor   string
	Kind    string
	Reason  string
	Message string
}

func (e *DeniedError) Error() string { return e.Message }

// Is makes a DeniedError match ErrNotAllowed.
func (e *DeniedError) Is(target error) bool { return target == ErrNotAllowed }

// MayDecide returns nil when id may approve or reject the request for r that requestedBy made,
// and a *DeniedError saying why not otherwise: nobody decides their own request (subjects
// compared case-insensitively, so "Alice" cannot approve "alice"'s), an Admin requirement needs
// Admin, a Production requirement needs EnvironmentOwner of Production or Admin, and a role
// this version does not know is refused.
func MayDecide(id *auth.Identity, r Requirement, requestedBy string) error {
	if id == nil || id.Subject == "" {
		return &DeniedError{Kind: r.Kind, Reason: ReasonUnauthenticated, Message: "deciding an approval needs an authenticated caller"}
	}
	deny := func(reason, format string, args ...any) error {
		return &DeniedError{Actor: id.Subject, Kind: r.Kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	if strings.EqualFold(strings.TrimSpace(id.Subject), strings.TrimSpace(requestedBy)) {
		return deny(ReasonOwnRequest, "%s requested this deployment and cannot approve or reject its own request: another person must decide", id.Subject)
	}
	switch r.RequiredRole {
	case RoleAdmin:
		if !id.Has(auth.Admin) {
			return deny(ReasonRole, "the %s approval needs the Admin role; %s has %s", r.Kind, id.Subject, rolesOf(id))
		}
	case RoleProductionOwner:
		if !id.Has(auth.Admin) && !id.OwnsEnvironment(string(store.EnvironmentProduction)) {
			return deny(ReasonRole, "the %s approval needs EnvironmentOwner:Production or Admin; %s has %s", r.Kind, id.Subject, rolesOf(id))
		}
	default:
		return deny(ReasonUnknownRole, "the %s approval needs the role %q, which this manager does not know: nobody may decide it", r.Kind, r.RequiredRole)
	}
	return nil
}

// MayDecideApproval is MayDecide for a stored approval.
func MayDecideApproval(id *auth.Identity, a *store.Approval) error {
	return MayDecide(id, RequirementOf(a), a.RequestedBy)
}

// rolesOf spells id's roles as tokens carry them: "[Operator EnvironmentOwner:Dev]".
func rolesOf(id *auth.Identity) string {
	var rs []string
	for _, r := range id.Roles {
		if r != auth.EnvironmentOwner {
			rs = append(rs, string(r))
		}
	}
	for _, env := range id.Environments {
		rs = append(rs, string(auth.EnvironmentOwnerOf(env)))
	}
	if len(rs) == 0 {
		return "no role"
	}
	return "[" + strings.Join(rs, " ") + "]"
}
