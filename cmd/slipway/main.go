// Command slipway is the slipway CLI: the manager's verbs over its API and the in-cluster verbs
// over the kubeconfig. docs/cli.md describes it.
package main

import (
	"os"

	"github.com/slipway-dev/slipway/internal/cli"
)

func main() { os.Exit(cli.Main()) }
