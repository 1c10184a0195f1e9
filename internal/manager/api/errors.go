package api

// Error is the body of every error answer: {"code","message","details"}. Details carry the
// field of a bad input ("field", "reason"), the kind and name of what was not found, and the
// request id ("requestId") that the manager's log lines of the request carry.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error codes.
const (
	CodeInvalid         = "InvalidArgument"
	CodeNotFound        = "NotFound"
	CodeAlreadyExists   = "AlreadyExists"
	CodeConflict        = "Conflict"
	CodeUnauthenticated = "Unauthenticated"
	CodeForbidden       = "Forbidden"
	CodeRateLimited     = "RateLimited"
	CodeTooLarge        = "RequestTooLarge"
	CodeUnsupported     = "UnsupportedMediaType"
	CodeUnavailable     = "Unavailable"
	CodeInternal        = "Internal"
)
