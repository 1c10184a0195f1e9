package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/slipway-dev/slipway/internal/cli/client"
)

// Exit codes (gh's): what a script can tell apart.
const (
	ExitOK        = 0
	ExitError     = 1
	ExitCancelled = 2
	ExitAuth      = 4
	ExitPending   = 8
)

// ErrSilent fails a command whose message was already printed (exit 1).
var ErrSilent = errors.New("silent error")

// ErrCancelled is a command the user stopped: Ctrl-C, or "no" to a confirmation (exit 2).
var ErrCancelled = errors.New("cancelled")

// AuthError is a command refused for who the user is: not signed in, a token the manager does
// not accept (401), or a role that may not (403) (exit 4).
type AuthError struct{ Err error }

func (e *AuthError) Error() string { return e.Err.Error() }
func (e *AuthError) Unwrap() error { return e.Err }

// PendingError is what a waiting command returns when --timeout passed before what it waits for
// ended (exit 8): the thing is still under way.
type PendingError struct{ Message string }

func (e *PendingError) Error() string { return e.Message }

// Pending builds a *PendingError.
func Pending(format string, args ...any) error {
	return &PendingError{Message: fmt.Sprintf(format, args...)}
}

// FlagError is bad usage (an unknown flag, a missing argument, flags that do not go together):
// the message and a pointer to --help (exit 1).
type FlagError struct {
	Err error
	// Command is the command path ("slipway deploy"), for the --help pointer.
	Command string
}

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// flagErrorf is a usage error of the command being run.
func flagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// ExitCode is the exit code for the error a command returned.
func ExitCode(err error) int {
	var pending *PendingError
	var authErr *AuthError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return ExitCancelled
	case errors.As(err, &authErr), client.IsAuth(err):
		return ExitAuth
	case errors.As(err, &pending):
		return ExitPending
	}
	return ExitError
}

// printError writes err for people on w, with a hint where one helps.
func printError(w io.Writer, err error) {
	var flagErr *FlagError
	var apiErr *client.APIError
	switch {
	case err == nil, errors.Is(err, ErrSilent):
		return
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		fmt.Fprintln(w, "cancelled")
		return
	case errors.As(err, &flagErr):
		fmt.Fprintf(w, "error: %v\n", err)
		if flagErr.Command != "" {
			fmt.Fprintf(w, "Run '%s --help' for usage.\n", flagErr.Command)
		}
		return
	case errors.As(err, &apiErr):
		fmt.Fprintf(w, "error: %v\n", err)
		switch {
		case apiErr.StatusCode == 401:
			fmt.Fprintln(w, "The manager does not accept the token: sign in again with slipway login.")
		case apiErr.StatusCode >= 500 && apiErr.RequestID() != "":
			fmt.Fprintf(w, "The manager's log has the cause under request id %s.\n", apiErr.RequestID())
		}
		return
	}
	fmt.Fprintf(w, "error: %v\n", err)
}
