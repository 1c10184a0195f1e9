package gitsource

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Errors Fetch, ResolveBranch and Snapshot return, wrapped with details; test with errors.Is.
var (
	// ErrInvalidURL: the URL is not http(s), or carries credentials.
	ErrInvalidURL = errors.New("invalid repository URL")
	// ErrInvalidCredentials: the credentials Secret has none of the expected keys.
	ErrInvalidCredentials = errors.New("invalid git credentials")
	// ErrRepositoryNotFound: the server has no repository at the URL.
	ErrRepositoryNotFound = errors.New("repository not found")
	// ErrAuthenticationRequired: the server asks for credentials and none were given.
	ErrAuthenticationRequired = errors.New("repository requires authentication")
	// ErrAuthenticationFailed: the server refused the credentials given (HTTP 401 or 403).
	ErrAuthenticationFailed = errors.New("repository refused the credentials")
	// ErrBranchNotFound: the branch does not exist (or the repository is empty).
	ErrBranchNotFound = errors.New("branch not found")
	// ErrCommitNotFound: the commit is not in the repository (or not reachable from a branch
	// or tag, on servers that only serve reachable commits).
	ErrCommitNotFound = errors.New("commit not found")
	// ErrPathNotFound: the path does not exist at the commit, or is not of the kind asked for.
	ErrPathNotFound = errors.New("path not found")
	// ErrInvalidPath: the path is absolute or leaves the repository.
	ErrInvalidPath = errors.New("invalid path")
	// ErrUnsafeSymlink: a symbolic link in the repository points outside of it.
	ErrUnsafeSymlink = errors.New("symbolic link leaves the repository")
	// ErrTooLarge: the fetch or the checkout exceeds its size bound.
	ErrTooLarge = errors.New("repository too large")
	// ErrTimeout: the operation exceeded its time bound.
	ErrTimeout = errors.New("timed out")
)

// classify maps go-git and context errors to the errors above, keeping the original in the chain.
func classify(err error, url string, authenticated bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%w: %s: %w", ErrRepositoryNotFound, url, err)
	case errors.Is(err, transport.ErrAuthenticationRequired) && !authenticated:
		return fmt.Errorf("%w: %s: %w", ErrAuthenticationRequired, url, err)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%w: %s: %w", ErrAuthenticationFailed, url, err)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%w: %s is empty: %w", ErrBranchNotFound, url, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s: %w", ErrTimeout, url, err)
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrTimeout):
		return err
	}
	return fmt.Errorf("%s: %w", url, err)
}
