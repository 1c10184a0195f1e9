package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// savepoint is the name atomic uses inside a caller's transaction; nesting reuses it safely
// (ROLLBACK TO and RELEASE act on the innermost savepoint of that name).
const savepoint = "sqlstore_atomic"

// atomic runs fn on an executor inside one transaction: a new one on the write pool (SQLite's
// one write connection, BEGIN IMMEDIATE), or a savepoint inside the caller's transaction. Either
// way a failure leaves nothing half-written, and on a Tx the caller's transaction stays usable
// (on PostgreSQL a failed statement would otherwise abort it). fn's error is returned as is.
func (e *executor) atomic(ctx context.Context, fn func(ex *executor) error) error {
	switch w := e.w.(type) {
	case *sql.Tx:
		if _, err := w.ExecContext(ctx, "SAVEPOINT "+savepoint); err != nil {
			return fmt.Errorf("%s store: savepoint: %w", e.d.Engine, e.mapErr(err))
		}
		if err := fn(e); err != nil {
			if _, rerr := w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+savepoint); rerr != nil {
				return errors.Join(err, fmt.Errorf("%s store: roll back to savepoint: %w", e.d.Engine, rerr))
			}
			_, _ = w.ExecContext(context.WithoutCancel(ctx), "RELEASE SAVEPOINT "+savepoint)
			return err
		}
		if _, err := w.ExecContext(ctx, "RELEASE SAVEPOINT "+savepoint); err != nil {
			return fmt.Errorf("%s store: release savepoint: %w", e.d.Engine, e.mapErr(err))
		}
		return nil
	case *sql.DB:
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("%s store: begin: %w", e.d.Engine, err)
		}
		if err := fn(&executor{r: tx, w: tx, d: e.d}); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("%s store: commit: %w", e.d.Engine, e.mapErr(err))
		}
		return nil
	default:
		return fmt.Errorf("%s store: no transaction on a %T", e.d.Engine, e.w)
	}
}

// rawJSON scans a nullable JSON column (PostgreSQL json, SQLite TEXT) into a json.RawMessage of
// its own (the driver's buffer is copied); NULL is nil.
type rawJSON struct{ m *json.RawMessage }

func (d rawJSON) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.m = nil
	case []byte:
		*d.m = append(json.RawMessage(nil), v...)
	case string:
		*d.m = json.RawMessage(v)
	default:
		return fmt.Errorf("scan JSON: unexpected %T", v)
	}
	return nil
}

// jsonArg is a JSON document as a query argument: text (SQLite's STRICT TEXT column refuses a
// BLOB), or NULL when empty.
func jsonArg(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

// checkJSON reports a document that is present but not valid JSON, naming the field.
func checkJSON(field string, m json.RawMessage) error {
	if len(m) > 0 && !json.Valid(m) {
		return fmt.Errorf("%s is not valid JSON", field)
	}
	return nil
}

// idsArg is a list of ids as the JSON array the *ListMany queries take.
func idsArg(ids []string) (string, error) {
	b, err := json.Marshal(ids)
	return string(b), err
}
