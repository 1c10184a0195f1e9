package devenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/slipway-dev/slipway/internal/cli/config"
)

// The cockpit's files: how a person reaches the manager's web UI and its CLI in the dev
// environment (docs/development.md, "The web UI and the CLI").
const (
	// UIURLFile holds a one-time sign-in link to the web UI, signed in as the dev Admin: opened,
	// it is exchanged for a session at once and leaves the address bar; a second use is refused
	// (`devenv ui-link` writes a new one).
	UIURLFile = "ui.url"
	// CLIConfigFile is a `slipway` config file (SLIPWAY_CONFIG) with the context dev: the
	// manager's URL, its certificate and the dev Admin's token.
	CLIConfigFile = "slipway.yaml"
	// CLIContext is that context's name.
	CLIContext = "dev"
	// DevAdmin is the subject of make dev's Admin token and sign-in link.
	DevAdmin = "dev-admin"
	// CLIBinary is where make dev builds the CLI, relative to the repository.
	CLIBinary = ".slipway/bin/slipway"
)

// writeCockpitAccess writes ui.url (a sign-in link valid as long as the token, used once) and
// slipway.yaml into the state directory, both 0600: each holds a credential.
func writeCockpitAccess(ctx context.Context, dir string, m *manager) error {
	link, err := loginLink(ctx, m.bin, m.files.jwtSecret, m.api.base)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, UIURLFile), []byte(link+"\n"), 0o600); err != nil {
		return err
	}
	return writeCLIConfig(dir, m.api.base, m.token)
}

// loginLink runs `manager login-link` for the dev Admin, valid for ManagerTokenTTL.
func loginLink(ctx context.Context, bin, secretFile, base string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "login-link", "--jwt-secret-file="+secretFile, "--url="+base,
		"--subject="+DevAdmin, "--role=Admin", "--ttl="+ManagerTokenTTL.String())
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("manager login-link: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// writeCLIConfig writes slipway.yaml with the context dev (current) for the manager at base,
// trusting its certificate by the CA file make dev wrote.
func writeCLIConfig(dir, base, token string) error {
	ca, err := filepath.Abs(filepath.Join(dir, ManagerCAFile))
	if err != nil {
		return err
	}
	path := filepath.Join(dir, CLIConfigFile)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	cfg.Upsert(config.Context{Name: CLIContext, Server: base, User: DevAdmin, CertificateAuthority: ca},
		config.User{Name: DevAdmin, Token: token})
	return cfg.Save()
}

// RefreshUILink writes a new one-time sign-in link into the state directory of a running dev
// environment (`devenv ui-link`) and returns it: the manager's URL and secret are the files
// make dev wrote.
func RefreshUILink(ctx context.Context, dir, managerBin string) (string, error) {
	base, err := os.ReadFile(filepath.Join(dir, ManagerURLFile))
	if err != nil {
		return "", fmt.Errorf("no dev environment's manager in %s (make dev-up starts one): %w", dir, err)
	}
	link, err := loginLink(ctx, managerBin, filepath.Join(dir, managerStateDir, managerJWTSecret), strings.TrimSpace(string(base)))
	if err != nil {
		return "", err
	}
	return link, os.WriteFile(filepath.Join(dir, UIURLFile), []byte(link+"\n"), 0o600)
}
