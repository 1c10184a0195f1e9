package clusters

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// EncryptionKeysEnv holds the keyring when no key file is given: the key file's format, with
// newlines or commas between keys.
const EncryptionKeysEnv = "SLIPWAY_MANAGER_ENCRYPTION_KEYS"

// KeySize is the size of every key: AES-256.
const KeySize = 32

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ErrDecrypt is returned by Open for a ciphertext that does not open: tampered, truncated, sealed
// for other additional data, or by another key under the same id.
var ErrDecrypt = errors.New("ciphertext does not decrypt: tampered, truncated or sealed under another key or for another cluster")

// Keyring seals and opens credentials with AES-256-GCM under named keys. The first key is the
// primary: it seals. Every key opens, so a rotation loads the new key first and the old ones
// after it, re-seals (RotateKeys) and then drops the old ones.
//
// A ciphertext is nonce (12 random bytes) || GCM output; the key id is stored beside it.
type Keyring struct {
	primary string
	ids     []string
	aeads   map[string]cipher.AEAD
}

// ParseKeyring reads keys in this format: one key per line (or separated by commas),
// "<id>:<base64 of 32 random bytes>", the first the primary; blank lines and lines starting with
// '#' are skipped. An id is 1-64 of [A-Za-z0-9._-]. Errors name the line, never a key's bytes.
func ParseKeyring(text []byte) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	sc := bufio.NewScanner(bytes.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		for entry := range strings.SplitSeq(sc.Text(), ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" || strings.HasPrefix(entry, "#") {
				continue
			}
			id, b64, ok := strings.Cut(entry, ":")
			if !ok {
				return nil, fmt.Errorf("encryption keys, line %d: want <id>:<base64 key>", line)
			}
			id = strings.TrimSpace(id)
			if !keyIDPattern.MatchString(id) {
				return nil, fmt.Errorf("encryption keys, line %d: a key id is 1-64 of A-Z a-z 0-9 . _ -", line)
			}
			if _, dup := k.aeads[id]; dup {
				return nil, fmt.Errorf("encryption keys, line %d: key id %q appears twice", line, id)
			}
			key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
			if err != nil {
				return nil, fmt.Errorf("encryption keys, line %d: key %q is not standard base64", line, id)
			}
			if len(key) != KeySize {
				return nil, fmt.Errorf("encryption keys, line %d: key %q is %d bytes, want %d (AES-256)", line, id, len(key), KeySize)
			}
			aead, err := newAEAD(key)
			clear(key)
			if err != nil {
				return nil, fmt.Errorf("encryption keys, line %d: key %q: %w", line, id, err)
			}
			k.aeads[id] = aead
			k.ids = append(k.ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("encryption keys: %w", err)
	}
	if len(k.ids) == 0 {
		return nil, errors.New("encryption keys: none given (want lines <id>:<base64 of 32 bytes>; `manager gen-key` makes one)")
	}
	k.primary = k.ids[0]
	return k, nil
}

// LoadKeyring reads the keyring from path, or from $SLIPWAY_MANAGER_ENCRYPTION_KEYS when path is
// empty; it is an error when neither is set.
func LoadKeyring(path string) (*Keyring, error) {
	if path != "" {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the encryption key file: %w", err)
		}
		k, err := ParseKeyring(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
	text := os.Getenv(EncryptionKeysEnv)
	if text == "" {
		return nil, fmt.Errorf("no encryption key: give --encryption-key-file or set %s (`manager gen-key` makes a key)", EncryptionKeysEnv)
	}
	k, err := ParseKeyring([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EncryptionKeysEnv, err)
	}
	return k, nil
}

// GenerateKey returns a new key line "<id>:<base64>" with a random id ("k" and 8 hex digits) and
// 32 random bytes, for a key file or $SLIPWAY_MANAGER_ENCRYPTION_KEYS.
func GenerateKey() (string, error) {
	var id [4]byte
	key := make([]byte, KeySize)
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return "k" + hex.EncodeToString(id[:]) + ":" + base64.StdEncoding.EncodeToString(key), nil
}

// Primary is the id of the key that seals.
func (k *Keyring) Primary() string { return k.primary }

// IDs lists the loaded key ids, the primary first.
func (k *Keyring) IDs() []string { return slices.Clone(k.ids) }

// Has reports whether a key with this id is loaded.
func (k *Keyring) Has(id string) bool { _, ok := k.aeads[id]; return ok }

// Seal encrypts plaintext under the primary key, binding additionalData (which is not stored:
// the same bytes must be given to Open). It returns the ciphertext and the primary key's id.
func (k *Keyring) Seal(plaintext, additionalData []byte) ([]byte, string, error) {
	aead := k.aeads[k.primary]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("seal: reading a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plaintext, additionalData), k.primary, nil
}

// Open decrypts a ciphertext sealed by key keyID for additionalData. A key that is not loaded is
// an error naming the id; anything else that fails is ErrDecrypt.
func (k *Keyring) Open(ciphertext []byte, keyID string, additionalData []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("encryption key %q is not loaded (loaded: %s)", keyID, strings.Join(k.ids, ", "))
	}
	if len(ciphertext) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrDecrypt
	}
	plain, err := aead.Open(nil, ciphertext[:aead.NonceSize()], ciphertext[aead.NonceSize():], additionalData)
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
