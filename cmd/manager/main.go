// Command manager runs the slipway operator manager: a REST API that registers clusters and
// operators and checks CRD compatibility (docs/manager.md).
//
//	manager serve        serve the API (migrating the database first unless --migrate=false)
//	manager migrate      apply the database migrations and exit
//	manager token        mint an HS256 token for a role (development and scripts)
//	manager rotate-key   re-seal every stored secret under the primary encryption key
//	manager gen-key      print a new encryption key line for the key file
//	manager openapi      print the API's OpenAPI 3 document
//	manager login-link   print a one-time sign-in link for the web UI
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/slipway-dev/slipway/internal/manager/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
