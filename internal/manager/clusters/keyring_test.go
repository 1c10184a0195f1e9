package clusters

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustKeyring(t testing.TB, lines ...string) *Keyring {
	t.Helper()
	k, err := ParseKeyring([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKeyLine(t testing.TB) string {
	t.Helper()
	line, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestKeyringSealsWithPrimaryAndOpensWithAny(t *testing.T) {
	oldLine, newLine := newKeyLine(t), newKeyLine(t)
	old := mustKeyring(t, oldLine)
	plain := []byte("apiVersion: v1\nkind: Config\n")
	ad := aad("kubeconfig", "prod-eu", "id-1")

	ct, id, err := old.Seal(plain, ad)
	if err != nil {
		t.Fatal(err)
	}
	if id != old.Primary() || bytes.Contains(ct, plain) {
		t.Fatalf("sealed under %q (want %q); ciphertext holds the plaintext: %v", id, old.Primary(), bytes.Contains(ct, plain))
	}
	ct2, _, _ := old.Seal(plain, ad)
	if bytes.Equal(ct, ct2) {
		t.Fatal("two seals of the same plaintext are equal: the nonce is not random")
	}

	// Rotation: the new key first (primary), the old one after it.
	both := mustKeyring(t, "# rotated", newLine, "", oldLine)
	if both.Primary() == old.Primary() || !both.Has(old.Primary()) || len(both.IDs()) != 2 {
		t.Fatalf("keyring ids %v, primary %q", both.IDs(), both.Primary())
	}
	got, err := both.Open(ct, id, ad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open with the rotated keyring: %q, %v", got, err)
	}
	ct3, id3, err := both.Seal(plain, ad)
	if err != nil || id3 != both.Primary() {
		t.Fatalf("seal after rotation: key %q, %v", id3, err)
	}
	// Once the old key is dropped, what it sealed no longer opens, and says which key is missing.
	onlyNew := mustKeyring(t, newLine)
	if _, err := onlyNew.Open(ct, id, ad); err == nil || !strings.Contains(err.Error(), id) {
		t.Fatalf("open under a dropped key: %v", err)
	}
	if got, err := onlyNew.Open(ct3, id3, ad); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open re-sealed: %q, %v", got, err)
	}
}

func TestKeyringRefusesTamperingAndOtherClusters(t *testing.T) {
	k := mustKeyring(t, newKeyLine(t))
	plain := []byte("token-value")
	ct, id, err := k.Seal(plain, aad("token", "a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		ct []byte
		ad []byte
	}{
		"other cluster":    {ct, aad("token", "b", "1")},
		"other cluster id": {ct, aad("token", "a", "2")},
		"other column":     {ct, aad("kubeconfig", "a", "1")},
		"flipped byte":     {flip(ct, len(ct)/2), aad("token", "a", "1")},
		"flipped nonce":    {flip(ct, 0), aad("token", "a", "1")},
		"truncated":        {ct[:len(ct)-1], aad("token", "a", "1")},
		"short":            {ct[:5], aad("token", "a", "1")},
		"empty":            {nil, aad("token", "a", "1")},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := k.Open(tc.ct, id, tc.ad)
			if !errors.Is(err, ErrDecrypt) || got != nil {
				t.Fatalf("want ErrDecrypt, got %q, %v", got, err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

func TestParseKeyringErrorsNameTheLineNotTheKey(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	valid := newKeyLine(t)
	for name, text := range map[string]string{
		"empty":         "",
		"only comments": "# nothing\n\n",
		"no colon":      valid + "\n" + strings.Replace(valid, ":", "", 1),
		"short key":     "k1:" + secret,
		"not base64":    "k1:" + secret + "!!",
		"bad id":        "bad id:" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"duplicate id":  "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + ",k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKeyring([]byte(text))
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "sixteen") {
				t.Fatalf("error quotes the key: %v", err)
			}
			t.Log(err)
		})
	}
	if _, err := ParseKeyring([]byte("k1:" + secret)); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "16 bytes") {
		t.Fatalf("short key: %v", err)
	}
}

func TestLoadKeyringFromFileOrEnvironment(t *testing.T) {
	a, b := newKeyLine(t), newKeyLine(t)
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(a+"\n"+b+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := LoadKeyring(path)
	if err != nil || k.Primary() != strings.SplitN(a, ":", 2)[0] || len(k.IDs()) != 2 {
		t.Fatalf("file: %v, %v", k, err)
	}
	t.Setenv(EncryptionKeysEnv, b+","+a)
	k, err = LoadKeyring("")
	if err != nil || k.Primary() != strings.SplitN(b, ":", 2)[0] || len(k.IDs()) != 2 {
		t.Fatalf("env: %v, %v", k, err)
	}
	t.Setenv(EncryptionKeysEnv, "")
	if _, err := LoadKeyring(""); err == nil || !strings.Contains(err.Error(), EncryptionKeysEnv) {
		t.Fatalf("neither: %v", err)
	}
	if _, err := LoadKeyring(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file: want an error")
	}
}
