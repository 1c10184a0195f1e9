#!/usr/bin/env bash
# Fails when a controller package, a webhook package or a package of the controllers' runtime kit
# (internal/operator and its subpackages) depends on internal/operator/command, the assembler
# that imports every controller to build the operator's command line (internal/operator/doc.go).
# Tests count too: a controller's test that built the whole operator through the assembler would
# tie every system to every other. Run by make verify.
set -euo pipefail

GO=${GO:-go}
module=$($GO list -m)
assembler=$module/internal/operator/command
# Every package of the kit but the assembler itself (and its own test variants).
pkgs=$($GO list ./internal/controller/... ./internal/webhook/... ./internal/operator/... | grep -vx "$assembler")

# One line per (package, dependency), test variants included ("p [p.test]", "p_test [p.test]").
bad=$($GO list -e -tags e2e -test -f '{{$p := .ImportPath}}{{range .Deps}}{{$p}} -> {{.}}{{"\n"}}{{end}}' $pkgs |
	grep -E " -> ${assembler//./\\.}( \[.*\])?\$" | sed -E "s# -> .*##" | grep -v "\.test$" | grep -vE "^${assembler//./\\.}( |\$)" | sort -u || true)
if [[ -n $bad ]]; then
	echo "these packages depend on $assembler, the operator's assembler; controllers and the kit must not:" >&2
	echo "$bad" | sed 's/^/  /' >&2
	exit 1
fi
