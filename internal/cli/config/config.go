// Package config is the CLI's contexts file: which managers the user signed in to (contexts,
// each a server and a user), their tokens (users), and which context is current. It lives at
// $SLIPWAY_CONFIG, else $XDG_CONFIG_HOME/slipway/config.yaml, else
// ~/.config/slipway/config.yaml, and is written with mode 0600, atomically (a temporary file in
// the same directory renamed over it).
//
//	current-context: prod
//	contexts:
//	- name: prod
//	  server: https://manager.example.com
//	  user: prod
//	  certificate-authority: /etc/slipway/ca.pem
//	users:
//	- name: prod
//	  token: eyJ...
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// EnvConfig names the variable that points the CLI at a config file.
const EnvConfig = "SLIPWAY_CONFIG"

// Config is the contexts file.
type Config struct {
	CurrentContext string    `json:"current-context,omitempty"`
	Contexts       []Context `json:"contexts,omitempty"`
	Users          []User    `json:"users,omitempty"`

	path string
}

// Context is one manager: its URL, the user whose token to send, and how to trust its TLS
// certificate (a CA file, or no verification at all).
type Context struct {
	Name                  string `json:"name"`
	Server                string `json:"server"`
	User                  string `json:"user,omitempty"`
	CertificateAuthority  string `json:"certificate-authority,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecure-skip-tls-verify,omitempty"`
}

// User is a token for a manager.
type User struct {
	Name  string `json:"name"`
	Token string `json:"token,omitempty"`
}

// Path is where the config file is: getenv(EnvConfig), else $XDG_CONFIG_HOME/slipway/config.yaml,
// else <home>/.config/slipway/config.yaml.
func Path(getenv func(string) string) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		return p, nil
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "slipway", "config.yaml"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("finding the config file: set %s or HOME: %w", EnvConfig, err)
		}
	}
	return filepath.Join(home, ".config", "slipway", "config.yaml"), nil
}

// Load reads the config file at path; a missing file is an empty config (saved there by Save).
func Load(path string) (*Config, error) {
	c := &Config{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the config file: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("the config file %s is not valid: %w", path, err)
	}
	c.path = path
	return c, nil
}

// File is the path the config was loaded from and is saved to.
func (c *Config) File() string { return c.path }

// Save writes the config to its file with mode 0600 (its directory created 0700): into a
// temporary file beside it, then renamed over it, so a reader never sees half a file.
func (c *Config) Save() error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving the config: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("saving the config: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the config: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the config: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		return fmt.Errorf("saving the config: %w", err)
	}
	return nil
}

// Context returns the named context.
func (c *Config) Context(name string) (Context, bool) {
	i := slices.IndexFunc(c.Contexts, func(x Context) bool { return x.Name == name })
	if i < 0 {
		return Context{}, false
	}
	return c.Contexts[i], true
}

// User returns the named user.
func (c *Config) User(name string) (User, bool) {
	i := slices.IndexFunc(c.Users, func(x User) bool { return x.Name == name })
	if i < 0 {
		return User{}, false
	}
	return c.Users[i], true
}

// Upsert adds or replaces the context and its user (by name), and makes the context current.
func (c *Config) Upsert(ctx Context, user User) {
	ctx.User = user.Name
	if i := slices.IndexFunc(c.Contexts, func(x Context) bool { return x.Name == ctx.Name }); i >= 0 {
		c.Contexts[i] = ctx
	} else {
		c.Contexts = append(c.Contexts, ctx)
	}
	if i := slices.IndexFunc(c.Users, func(x User) bool { return x.Name == user.Name }); i >= 0 {
		c.Users[i] = user
	} else {
		c.Users = append(c.Users, user)
	}
	c.CurrentContext = ctx.Name
}

// ErrNoContext is returned for a context name the file does not have.
var ErrNoContext = errors.New("no such context")

// Use makes the named context current.
func (c *Config) Use(name string) error {
	if _, ok := c.Context(name); !ok {
		return c.noContext(name)
	}
	c.CurrentContext = name
	return nil
}

// Delete removes the named context, and its user when no other context uses it; deleting the
// current context leaves none current.
func (c *Config) Delete(name string) error {
	ctx, ok := c.Context(name)
	if !ok {
		return c.noContext(name)
	}
	c.Contexts = slices.DeleteFunc(c.Contexts, func(x Context) bool { return x.Name == name })
	if !slices.ContainsFunc(c.Contexts, func(x Context) bool { return x.User == ctx.User }) {
		c.Users = slices.DeleteFunc(c.Users, func(x User) bool { return x.Name == ctx.User })
	}
	if c.CurrentContext == name {
		c.CurrentContext = ""
	}
	return nil
}

// ForgetToken removes token from every user holding it (a signed-out token is no use to any of
// them) and returns their names; the users and their contexts stay.
func (c *Config) ForgetToken(token string) []string {
	var names []string
	for i, u := range c.Users {
		if token != "" && u.Token == token {
			c.Users[i].Token = ""
			names = append(names, u.Name)
		}
	}
	return names
}

// Names are the contexts' names, in file order.
func (c *Config) Names() []string {
	out := make([]string, 0, len(c.Contexts))
	for _, x := range c.Contexts {
		out = append(out, x.Name)
	}
	return out
}

func (c *Config) noContext(name string) error {
	if len(c.Contexts) == 0 {
		return fmt.Errorf("%w %q: the config file %s has no contexts; run slipway login SERVER", ErrNoContext, name, c.path)
	}
	return fmt.Errorf("%w %q: the contexts are %s", ErrNoContext, name, strings.Join(c.Names(), ", "))
}
