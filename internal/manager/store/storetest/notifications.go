package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Channel creates a notification channel of kind webhook with sealed-looking bytes.
func Channel(ctx context.Context, tb testing.TB, e store.Executor, name string, routes ...store.NotificationRoute) *store.NotificationChannel {
	tb.Helper()
	c, err := e.NotificationChannelCreate(ctx, &store.NotificationChannel{Name: name, Kind: "webhook",
		Config: json.RawMessage(`{"endpoint":"https://hooks.example.com/…"}`), Routes: routes,
		SecretCiphertext: []byte("sealed:" + name), KeyID: "k1", CreatedBy: "alice"})
	if err != nil {
		tb.Fatalf("create channel %s: %v", name, err)
	}
	return c
}

// Delivery stores a pending delivery of kind to channel c, created at.
func Delivery(ctx context.Context, tb testing.TB, e store.Executor, c *store.NotificationChannel, kind string, at time.Time) *store.Notification {
	tb.Helper()
	n, err := e.NotificationInsert(ctx, &store.Notification{EventID: uuid.NewString(), ChannelID: c.ID, ChannelName: c.Name,
		ChannelKind: c.Kind, Kind: kind, Subject: "cluster/prod-1", Environments: []store.Environment{store.EnvironmentProduction},
		Summary: kind + " at " + at.Format(time.RFC3339Nano), Payload: json.RawMessage(`{"kind":"` + kind + `"}`), CreatedAt: at})
	if err != nil {
		tb.Fatalf("store a %s notification: %v", kind, err)
	}
	return n
}

func notificationIDs(ns []*store.Notification) []string {
	return names(ns, func(n *store.Notification) string { return n.ID })
}

var notificationCases = []testCase{
	{"ChannelCRUD", func(t *testing.T, b *testBundle) {
		routes := []store.NotificationRoute{{Kinds: []string{"deployment.failed"}, Environments: []store.Environment{store.EnvironmentProduction}}, {}}
		c := Channel(b.ctx, t, b.store, "ops", routes...)
		requireEqual(t, []any{c.Name, c.Kind, string(c.SecretCiphertext), c.KeyID, c.CreatedBy, c.Routes},
			[]any{"ops", "webhook", "sealed:ops", "k1", "alice", routes}, "created")
		_, err := b.store.NotificationChannelCreate(b.ctx, &store.NotificationChannel{Name: "ops", Kind: "slack", Config: json.RawMessage(`{}`)})
		requireErr(t, err, store.ErrAlreadyExists, "a second channel named ops")
		byName, err := b.store.NotificationChannelGetByName(b.ctx, "ops")
		requireOK(t, err, "get by name")
		byID, err := b.store.NotificationChannelGetByID(b.ctx, c.ID)
		requireOK(t, err, "get by id")
		requireEqual(t, byName, c, "by name")
		requireEqual(t, byID, c, "by id")
		_, err = b.store.NotificationChannelGetByName(b.ctx, "nope")
		requireErr(t, err, store.ErrNotFound, "unknown name")
		_, err = b.store.NotificationChannelGetByID(b.ctx, "not-a-uuid")
		requireErr(t, err, store.ErrNotFound, "an id that is not a UUID")

		for _, n := range []string{"b", "a", "c"} {
			Channel(b.ctx, t, b.store, n)
		}
		page, err := b.store.NotificationChannelList(b.ctx, &store.NotificationChannelListParams{Limit: 2})
		requireOK(t, err, "list")
		next, err := b.store.NotificationChannelList(b.ctx, &store.NotificationChannelListParams{After: page[1].Name, Limit: 2})
		requireOK(t, err, "list after")
		all, err := b.store.NotificationChannelListAll(b.ctx)
		requireOK(t, err, "list all")
		chName := func(c *store.NotificationChannel) string { return c.Name }
		requireEqual(t, [][]string{names(page, chName), names(next, chName), names(all, chName)},
			[][]string{{"a", "b"}, {"c", "ops"}, {"a", "b", "c", "ops"}}, "pages by name")

		upd := *c
		upd.Config, upd.Routes, upd.SecretCiphertext, upd.KeyID = json.RawMessage(`{"endpoint":"https://other.example.com/…"}`), nil, []byte("resealed"), "k2"
		upd.UpdatedAt = b.now.Add(time.Minute)
		got, err := b.store.NotificationChannelUpdate(b.ctx, &upd)
		requireOK(t, err, "update")
		requireEqual(t, []any{string(got.Config), len(got.Routes), string(got.SecretCiphertext), got.KeyID, got.UpdatedAt, got.CreatedAt},
			[]any{`{"endpoint":"https://other.example.com/…"}`, 0, "resealed", "k2", upd.UpdatedAt, c.CreatedAt}, "updated")
		upd.Name = "gone"
		_, err = b.store.NotificationChannelUpdate(b.ctx, &upd)
		requireErr(t, err, store.ErrNotFound, "update of an unknown channel")

		requireOK(t, b.store.NotificationChannelDelete(b.ctx, "ops", b.now), "delete")
		_, err = b.store.NotificationChannelGetByName(b.ctx, "ops")
		requireErr(t, err, store.ErrNotFound, "deleted")
		requireErr(t, b.store.NotificationChannelDelete(b.ctx, "ops", b.now), store.ErrNotFound, "delete twice")
	}},
	{"DeleteFailsPending", func(t *testing.T, b *testBundle) {
		c, other := Channel(b.ctx, t, b.store, "ops"), Channel(b.ctx, t, b.store, "other")
		pending := Delivery(b.ctx, t, b.store, c, "deployment.failed", b.now)
		done := Delivery(b.ctx, t, b.store, c, "deployment.completed", b.now)
		kept := Delivery(b.ctx, t, b.store, other, "deployment.failed", b.now)
		ok, err := b.store.NotificationMarkDelivered(b.ctx, done.ID, b.now)
		requireOK(t, err, "mark delivered")
		requireEqual(t, ok, true, "marked")
		requireOK(t, b.store.NotificationChannelDelete(b.ctx, "ops", b.now.Add(time.Second)), "delete")
		for _, w := range []struct {
			id    string
			state store.NotificationState
			err   string
		}{{pending.ID, store.NotificationFailed, "the channel was deleted"}, {done.ID, store.NotificationDelivered, ""},
			{kept.ID, store.NotificationPending, ""}} {
			n, err := b.store.NotificationGetByID(b.ctx, w.id)
			requireOK(t, err, "get "+w.id)
			requireEqual(t, []any{n.State, n.LastError, n.NextAttemptAt == nil}, []any{w.state, w.err, w.state != store.NotificationPending}, "delivery "+w.id)
		}
	}},
	{"InsertListFilters", func(t *testing.T, b *testBundle) {
		a, c := Channel(b.ctx, t, b.store, "a"), Channel(b.ctx, t, b.store, "c")
		var made []*store.Notification
		for i, kind := range []string{"deployment.failed", "operator.unhealthy", "deployment.failed", "cluster.unreachable", "deployment.failed"} {
			ch := a
			if i%2 == 1 {
				ch = c
			}
			made = append(made, Delivery(b.ctx, t, b.store, ch, kind, b.now.Add(time.Duration(i)*time.Second)))
		}
		n := made[0]
		requireEqual(t, []any{n.State, n.Attempts, n.ChannelName, n.Environments, string(n.Payload), *n.NextAttemptAt, n.CreatedAt},
			[]any{store.NotificationPending, 0, "a", []store.Environment{store.EnvironmentProduction}, `{"kind":"deployment.failed"}`, b.now, b.now}, "stored")
		got, err := b.store.NotificationGetByID(b.ctx, n.ID)
		requireOK(t, err, "get")
		requireEqual(t, got, n, "read back")
		_, err = b.store.NotificationGetByID(b.ctx, uuid.NewString())
		requireErr(t, err, store.ErrNotFound, "unknown id")
		_, err = b.store.NotificationInsert(b.ctx, &store.Notification{EventID: uuid.NewString(), ChannelID: a.ID, ChannelName: "a",
			Kind: "x", Subject: "s", Payload: json.RawMessage(`{not json`)})
		if err == nil {
			t.Fatal("a payload that is not JSON was stored")
		}
		ok, err := b.store.NotificationMarkDelivered(b.ctx, made[2].ID, b.now)
		requireOK(t, err, "mark delivered")
		requireEqual(t, ok, true, "marked")

		list := func(p store.NotificationListParams) []string {
			t.Helper()
			ns, err := b.store.NotificationList(b.ctx, &p)
			requireOK(t, err, "list")
			return notificationIDs(ns)
		}
		ids := notificationIDs(made)
		requireEqual(t, list(store.NotificationListParams{}), []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, "newest first")
		requireEqual(t, list(store.NotificationListParams{Limit: 2, Before: ids[3]}), []string{ids[2], ids[1]}, "a page before")
		requireEqual(t, list(store.NotificationListParams{Kind: "deployment.failed", State: store.NotificationPending}), []string{ids[4], ids[0]}, "kind and state")
		requireEqual(t, list(store.NotificationListParams{ChannelName: "c"}), []string{ids[3], ids[1]}, "channel")
		requireEqual(t, list(store.NotificationListParams{State: store.NotificationDelivered}), []string{ids[2]}, "delivered")
		requireEqual(t, list(store.NotificationListParams{Before: "not-a-uuid"}), []string{}, "a bad page token")
	}},
	{"ClaimLeaseRetry", func(t *testing.T, b *testBundle) {
		at := func(s int) time.Time { return b.now.Add(time.Duration(s) * time.Second) }
		a, c := Channel(b.ctx, t, b.store, "a"), Channel(b.ctx, t, b.store, "c")
		d := []*store.Notification{Delivery(b.ctx, t, b.store, a, "k", at(0)), Delivery(b.ctx, t, b.store, a, "k", at(1)),
			Delivery(b.ctx, t, b.store, a, "k", at(2)), Delivery(b.ctx, t, b.store, c, "k", at(3)), Delivery(b.ctx, t, b.store, c, "k", at(60))}
		claim := func(owner string, ch *store.NotificationChannel, now time.Time, limit int) []*store.Notification {
			t.Helper()
			out, err := b.store.NotificationClaim(b.ctx, &store.NotificationClaimParams{Owner: owner, ChannelID: ch.ID, Now: now, Lease: 10 * time.Second, Limit: limit})
			requireOK(t, err, "claim by "+owner)
			return out
		}
		due := func(now time.Time) []string {
			t.Helper()
			ids, err := b.store.NotificationDueChannels(b.ctx, now)
			requireOK(t, err, "due channels")
			return ids
		}
		want := []string{a.ID, c.ID}
		slices.Sort(want)
		requireEqual(t, due(at(5)), want, "due channels")
		got := claim("r1", a, at(5), 2)
		requireEqual(t, notificationIDs(got), []string{d[0].ID, d[1].ID}, "r1 claims the earliest two")
		requireEqual(t, []any{got[0].Attempts, got[0].ClaimedBy, *got[0].LeaseUntil}, []any{1, "r1", at(15)}, "claimed")
		requireEqual(t, notificationIDs(claim("r2", a, at(6), 5)), []string{d[2].ID}, "r2 gets what r1 did not hold")
		requireEqual(t, due(at(7)), []string{c.ID}, "a's are all claimed")
		requireEqual(t, notificationIDs(claim("r2", c, at(7), 5)), []string{d[3].ID}, "not the one due later")

		// r1 dies: its claims lapse and r2 takes them over; r1's late answer changes nothing.
		again := claim("r2", a, at(16), 5)
		requireEqual(t, notificationIDs(again), []string{d[0].ID, d[1].ID}, "r1's lapsed claims")
		requireEqual(t, again[0].Attempts, 2, "a lapsed claim counts its attempt")
		next := at(30)
		ok, err := b.store.NotificationRetry(b.ctx, &store.NotificationRetryParams{ID: d[0].ID, Owner: "r1", State: store.NotificationPending,
			LastError: "late", NextAttemptAt: &next, Now: at(17)})
		requireOK(t, err, "r1's retry")
		requireEqual(t, ok, false, "r1's claim was taken over")
		ok, err = b.store.NotificationRetry(b.ctx, &store.NotificationRetryParams{ID: d[0].ID, Owner: "r2", State: store.NotificationPending,
			LastError: "503 Service Unavailable", NextAttemptAt: &next, Now: at(17)})
		requireOK(t, err, "r2's retry")
		requireEqual(t, ok, true, "r2 records its attempt")
		n, err := b.store.NotificationGetByID(b.ctx, d[0].ID)
		requireOK(t, err, "get")
		requireEqual(t, []any{n.State, n.Attempts, n.LastError, *n.NextAttemptAt, n.ClaimedBy, n.LeaseUntil == nil},
			[]any{store.NotificationPending, 2, "503 Service Unavailable", next, "", true}, "retried")
		requireEqual(t, notificationIDs(claim("r3", a, at(29), 5)), []string{d[1].ID, d[2].ID}, "the lapsed claims, not the retry before its time")
		requireEqual(t, notificationIDs(claim("r3", a, at(30), 5)), []string{d[0].ID}, "due again")

		ok, err = b.store.NotificationMarkDelivered(b.ctx, d[0].ID, at(31))
		requireOK(t, err, "mark delivered")
		requireEqual(t, ok, true, "delivered")
		ok, err = b.store.NotificationMarkDelivered(b.ctx, d[0].ID, at(32))
		requireOK(t, err, "mark delivered twice")
		requireEqual(t, ok, false, "already delivered")
		ok, err = b.store.NotificationRetry(b.ctx, &store.NotificationRetryParams{ID: d[1].ID, Owner: "r3", State: store.NotificationFailed,
			LastError: "gave up", Now: at(33)})
		requireOK(t, err, "give up")
		requireEqual(t, ok, true, "failed")
		for id, want := range map[string]store.NotificationState{d[0].ID: store.NotificationDelivered, d[1].ID: store.NotificationFailed} {
			n, err := b.store.NotificationGetByID(b.ctx, id)
			requireOK(t, err, "get")
			requireEqual(t, []any{n.State, n.NextAttemptAt == nil, n.ClaimedBy}, []any{want, true, ""}, "final "+string(want))
			if want == store.NotificationDelivered && (n.DeliveredAt == nil || !n.DeliveredAt.Equal(at(31))) {
				t.Fatalf("delivered at %v, want %v", n.DeliveredAt, at(31))
			}
		}
		_, err = b.store.NotificationRetry(b.ctx, &store.NotificationRetryParams{ID: d[2].ID, Owner: "r3", State: store.NotificationPending, Now: at(33)})
		if err == nil {
			t.Fatal("pending again without a next attempt was accepted")
		}
	}},
	{"ConcurrentClaimersOneEach", func(t *testing.T, b *testBundle) {
		c := Channel(b.ctx, t, b.store, "busy")
		const total = 60
		for i := range total {
			Delivery(b.ctx, t, b.store, c, "k", b.now.Add(time.Duration(i)*time.Millisecond))
		}
		got := make([][]*store.Notification, writers)
		errs := parallel(func(i int) error {
			var err error
			got[i], err = b.store.NotificationClaim(b.ctx, &store.NotificationClaimParams{Owner: fmt.Sprint("r", i), ChannelID: c.ID,
				Now: b.now.Add(time.Second), Lease: time.Minute, Limit: 5})
			return err
		})
		seen := map[string]string{}
		for i, err := range errs {
			requireOK(t, err, "claim")
			for _, n := range got[i] {
				if prev, dup := seen[n.ID]; dup {
					t.Fatalf("notification %s claimed by %s and r%d", n.ID, prev, i)
				}
				seen[n.ID] = fmt.Sprint("r", i)
			}
		}
		requireEqual(t, len(seen), total, "claimed in all")
	}},
	{"StateTransitions", func(t *testing.T, b *testBundle) {
		set := func(subject, state string) store.NotificationStateChange {
			t.Helper()
			ch, err := b.store.NotificationStateSet(b.ctx, subject, state, b.now)
			requireOK(t, err, "set "+subject)
			return *ch
		}
		requireEqual(t, set("cluster/a", "Unhealthy"), store.NotificationStateChange{Changed: true}, "a new subject")
		requireEqual(t, set("cluster/a", "Unhealthy"), store.NotificationStateChange{}, "the same state")
		requireEqual(t, set("cluster/a", "Healthy"), store.NotificationStateChange{Changed: true, Previous: "Unhealthy"}, "recovered")
		requireEqual(t, set("cluster/b", "Healthy"), store.NotificationStateChange{Changed: true}, "another subject")
		if _, err := b.store.NotificationStateSet(b.ctx, "", "Healthy", b.now); err == nil {
			t.Fatal("an empty subject was accepted")
		}
		// Replicas seeing one change at once: one of them notifies it.
		for _, state := range []string{"Unhealthy", "Healthy"} {
			changes := make([]*store.NotificationStateChange, writers)
			errs := parallel(func(i int) error {
				var err error
				changes[i], err = b.store.NotificationStateSet(b.ctx, "operator/x/c", state, b.now)
				return err
			})
			n := 0
			for i, err := range errs {
				requireOK(t, err, "concurrent set")
				if changes[i].Changed {
					n++
				}
			}
			requireEqual(t, n, 1, "setters that saw the change to "+state)
		}
	}},
	{"InsertRolledBackWithItsCause", func(t *testing.T, b *testBundle) {
		c := Channel(b.ctx, t, b.store, "ops")
		errCause := errors.New("the cause failed")
		err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
			Delivery(ctx, t, tx, c, "deployment.failed", b.now)
			if ch, err := tx.NotificationStateSet(ctx, "cluster/z", "Unhealthy", b.now); err != nil || !ch.Changed {
				t.Fatalf("state in the transaction: %+v, %v", ch, err)
			}
			return errCause
		})
		requireErr(t, err, errCause, "the transaction")
		ns, err := b.store.NotificationList(b.ctx, &store.NotificationListParams{})
		requireOK(t, err, "list")
		requireEqual(t, len(ns), 0, "deliveries after the rollback")
		ch, err := b.store.NotificationStateSet(b.ctx, "cluster/z", "Unhealthy", b.now)
		requireOK(t, err, "set")
		requireEqual(t, ch.Changed, true, "the rolled-back state is not stored")
	}},
}
