package devenv

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/slipway-dev/slipway/internal/selfsigned"
)

// managerFiles are the paths of the manager's state under <Dir>/manager: its secrets, its TLS
// certificate and its SQLite database. All of it is made fresh on every start.
type managerFiles struct {
	dir        string
	jwtSecret  string // HS256 secret, base64 text of 32 random bytes
	keys       string // encryption key file: one line dev:<base64 of 32 bytes>
	cert       string // self-signed serving certificate (PEM), also the CA clients trust
	key        string // its ECDSA private key (PEM)
	database   string // the embedded SQLite database
	certPEM    []byte
	encryption string // the key line, for tests
}

// Names in the manager's state directory.
const (
	managerStateDir     = "manager"
	managerJWTSecret    = "jwt-secret"
	managerKeyFile      = "encryption-keys"
	managerCertFile     = "tls.crt"
	managerKeyPEMFile   = "tls.key"
	managerDatabaseFile = "manager.db"
	// managerKeyID is the id of the dev encryption key.
	managerKeyID = "dev"
)

// writeManagerSecrets removes <dir>/manager, the previous run's database and secrets included
// (the control plane that run registered is gone), and writes a new HS256 secret, a new
// encryption key and a new self-signed certificate for 127.0.0.1, ::1 and localhost.
func writeManagerSecrets(dir string, now time.Time) (managerFiles, error) {
	state := filepath.Join(dir, managerStateDir)
	f := managerFiles{
		dir:       state,
		jwtSecret: filepath.Join(state, managerJWTSecret),
		keys:      filepath.Join(state, managerKeyFile),
		cert:      filepath.Join(state, managerCertFile),
		key:       filepath.Join(state, managerKeyPEMFile),
		database:  filepath.Join(state, managerDatabaseFile),
	}
	if err := os.RemoveAll(state); err != nil {
		return f, fmt.Errorf("removing the previous run's manager state: %w", err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return f, err
	}
	secret, err := randomBase64(32)
	if err != nil {
		return f, err
	}
	key, err := randomBase64(32)
	if err != nil {
		return f, err
	}
	f.encryption = managerKeyID + ":" + key
	certPEM, keyPEM, err := selfsigned.Generate(now, "slipway manager (make dev)", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	if err != nil {
		return f, err
	}
	f.certPEM = certPEM
	for path, data := range map[string][]byte{
		f.jwtSecret: []byte(secret + "\n"),
		f.keys:      []byte(f.encryption + "\n"),
		f.key:       keyPEM,
		f.cert:      certPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, err
		}
	}
	return f, nil
}

// randomBase64 is n random bytes in standard base64: as text, a secret file's contents survive
// the reader trimming white space.
func randomBase64(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
