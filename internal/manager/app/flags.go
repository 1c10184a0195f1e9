package app

import (
	"flag"
	"fmt"
	"io"
)

// FlagSet returns the flag set subcommand name parses, the very one its run function builds
// (serveFlags, migrateFlags): the Helm chart's tests (charts/slipway-manager) parse the rendered
// container arguments with it, so a flag the manager does not know, or a value it refuses to
// parse, fails them. Only serve and migrate, the commands the chart runs, are available.
func FlagSet(name string, stderr io.Writer) (*flag.FlagSet, error) {
	switch name {
	case "serve":
		fs, _ := serveFlags(stderr)
		return fs, nil
	case "migrate":
		fs, _ := migrateFlags(stderr)
		return fs, nil
	}
	return nil, fmt.Errorf("no flag set for command %q (serve or migrate)", name)
}

// SecretEnv are the environment variables the manager reads secrets from (never flags, whose
// values show in ps): the chart fills them from Secrets, and its tests check it names no other.
var SecretEnv = []string{envDatabaseURL, envJWTSecret, envEncryptionKeys, envSMTPPassword}

// serveFlags is serve's flag set and the options it fills.
func serveFlags(stderr io.Writer) (*flag.FlagSet, *serveOptions) {
	fs := newFlagSet("serve", stderr)
	o := &serveOptions{}
	o.db.bind(fs)
	o.keys.bind(fs)
	o.auth.bind(fs)
	o.bind(fs)
	o.rollout.bind(fs)
	o.notifications.bind(fs)
	o.ui.bind(fs)
	return fs, o
}

// migrateFlags is migrate's flag set and the database options it fills.
func migrateFlags(stderr io.Writer) (*flag.FlagSet, *dbOptions) {
	fs := newFlagSet("migrate", stderr)
	db := &dbOptions{}
	db.bind(fs)
	return fs, db
}
