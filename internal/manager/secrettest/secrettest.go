// Package secrettest looks for a kubeconfig's credentials where the manager must never put them:
// responses, logs, the audit log and the database (issue: "a test greps all four").
package secrettest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
)

// Forms are the shapes in which the kubeconfig's client key could leak: a window of its
// PEM text, of the kubeconfig's base64 of it, of its DER bytes, and those bytes in hex (as
// PostgreSQL prints bytea).
func Forms(t testing.TB, kubeconfig []byte) [][]byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var forms [][]byte
	for _, ai := range cfg.AuthInfos {
		key := ai.ClientKeyData
		if len(key) == 0 {
			continue
		}
		block, _ := pem.Decode(key)
		if block == nil {
			t.Fatal("the client key is not PEM")
		}
		lines := strings.Split(string(key), "\n")
		b64 := base64.StdEncoding.EncodeToString(key)
		der := block.Bytes[len(block.Bytes)/2:][:32]
		if !strings.Contains(string(kubeconfig), b64[len(b64)/2:][:48]) {
			t.Fatal("the kubeconfig does not carry its key as base64: the search would miss it")
		}
		forms = append(forms, []byte(lines[2][:48]), []byte(b64[len(b64)/2:][:48]), der,
			[]byte(hex.EncodeToString(der)), []byte(hex.EncodeToString([]byte(lines[2][:48]))))
		if ai.Token != "" {
			forms = append(forms, []byte(ai.Token))
		}
	}
	if len(forms) == 0 {
		t.Fatal("the kubeconfig holds no client key to look for")
	}
	return forms
}

// DatabaseBytes is everything the database holds: the SQLite file with its WAL and shared-memory
// index, or every PostgreSQL table as text (bytea in hex).
func DatabaseBytes(t testing.TB, sqlitePath, pgURL string) []byte {
	t.Helper()
	if pgURL == "" {
		var out []byte
		for _, f := range []string{sqlitePath, sqlitePath + "-wal", sqlitePath + "-shm"} {
			data, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			out = append(out, data...)
		}
		if len(out) == 0 {
			t.Fatal("the SQLite database is empty")
		}
		return out
	}
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	rows, err := st.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 3 {
		t.Fatalf("only tables %v found", tables)
	}
	var out []byte
	for _, tbl := range tables {
		rows, err := st.Pool().Query(ctx, fmt.Sprintf(`SELECT t::text FROM %q t`, tbl))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s...)
		}
		rows.Close()
	}
	if !bytes.Contains(out, []byte(`\x`)) {
		t.Fatal("no bytea in the PostgreSQL dump: is the kubeconfig stored?")
	}
	return out
}

// AssertAbsent fails the test for every form found in data, naming where.
func AssertAbsent(t testing.TB, where string, data []byte, forms [][]byte) {
	t.Helper()
	for _, form := range forms {
		if bytes.Contains(data, form) {
			t.Errorf("a kubeconfig credential appears in the %s (as %.12q…)", where, form)
		}
	}
}
