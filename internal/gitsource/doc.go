// Package gitsource fetches a git repository at one commit over HTTP(S), for Catalyst's
// deployments (the chart, manifests or kustomization at an environment's commit) and for Project
// validation (is the source reachable, is the deployment path there).
//
// It uses go-git, in memory, and never runs the git binary:
//
//	creds, err := gitsource.CredentialsFromSecretData(secret.Data) // username/password, token or bearerToken
//	head, err := gitsource.ResolveBranch(ctx, gitsource.Options{URL: url, Branch: "main", Credentials: creds})
//	snap, err := gitsource.Fetch(ctx, gitsource.Options{URL: url, Branch: "feature/login", Commit: sha, Credentials: creds})
//	err = snap.RequireDir("charts/app")    // ErrPathNotFound when missing
//	err = snap.CheckoutDir(dir)            // or snap.CheckoutMemory()
//
// # What is downloaded
//
// ResolveBranch asks for the refs only. Fetch downloads the tip of the branch alone (depth 1) and
// stops there when that is the commit wanted, which is the common case of a pull request at its
// latest commit. Otherwise it asks for the commit alone by hash, which GitHub, GitLab and git
// servers with uploadpack.allowReachableSHA1InWant allow; servers that refuse are read in full:
// the branch's history, then every branch and tag.
//
// # Bounds and safety
//
//   - Only http:// and https:// URLs, without credentials in them, are accepted: file:// would read
//     the operator's own disk. Errors never contain credentials.
//   - Options.Timeout bounds a call (default 2 minutes), Options.MaxFetchBytes each downloaded
//     pack (default 128 MiB), Options.MaxCheckoutBytes the files of the commit written out or read
//     (default 256 MiB).
//   - Paths given to Stat, RequireDir and ReadFile must stay inside the repository; a checkout
//     refuses a tree with a symbolic link that points outside of it (say, to a service account
//     token), and CheckoutDir confines file access to its directory. Submodules are not fetched.
//
// # Errors
//
// Every failure wraps one of ErrInvalidURL, ErrInvalidCredentials, ErrRepositoryNotFound,
// ErrAuthenticationRequired (credentials needed, none given), ErrAuthenticationFailed (credentials
// refused), ErrBranchNotFound, ErrCommitNotFound, ErrPathNotFound, ErrInvalidPath,
// ErrUnsafeSymlink, ErrTooLarge or ErrTimeout when it is one of those; anything else (a network
// error, a server error) is returned as go-git reports it, with the URL. Test with errors.Is and
// turn them into condition reasons in the controller.
//
// Package gittest serves real repositories over HTTP for the tests.
package gitsource
