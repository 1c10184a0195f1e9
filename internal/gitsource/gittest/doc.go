// Package gittest serves real git repositories over HTTP for tests and the dev environment.
//
// Repositories are made on disk with the system git binary and served on 127.0.0.1 by git's own
// smart-HTTP server, git http-backend, run through net/http/cgi; so clients talk to the same
// protocol implementation as on a production git host, including its refusals (a commit that
// is not a branch tip cannot be asked for unless WithAllowReachableSHA1InWant is set, which is
// what GitHub and GitLab allow). WithBasicAuth puts the server behind HTTP basic auth.
//
//	srv := gittest.NewServer(t, gittest.WithBasicAuth("bot", "s3cret"))
//	repo := srv.NewRepository(t, "app")
//	sha, err := repo.Commit("add the chart", gittest.HelmChart("charts/app", "app"))
//	// clone srv.URL + "/app" with go-git, helm, kustomize, ...
//
// HelmChart, Manifests and Kustomization return the files of a small deployable application
// (a Deployment and a Service) in each of the three forms Catalyst deploys; Merge combines
// file sets into one commit.
//
// Start and CreateRepository return errors instead of taking a testing.TB, for use outside
// tests (the dev environment serves a sample repository with them).
package gittest
