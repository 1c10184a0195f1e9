package access

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/slipway-dev/slipway/internal/registry"
)

// MaxCachedClients bounds a Cache: when it is full it starts over empty, so settings no object
// uses any more (a rotated password, a replaced CA) do not pile up.
const MaxCachedClients = 256

// Factory makes a client for one set of options; registry.NewClient is the production one.
type Factory[T any] func(opts registry.Options, limiter *registry.Limiter) (T, error)

// Cache shares one client per set of options, so objects with the same registry settings share
// connections and bearer tokens, and a change of any setting (credentials, CA, insecure, ...)
// gives a new client at once. The zero value is ready; it is safe for concurrent use.
type Cache[T any] struct {
	mu      sync.Mutex
	clients map[string]T
}

// Get returns the client for opts, made with newClient on first use. A failure is not cached.
func (c *Cache[T]) Get(opts registry.Options, limiter *registry.Limiter, newClient Factory[T]) (T, error) {
	key := Key(opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.clients[key]; ok {
		return client, nil
	}
	client, err := newClient(opts, limiter)
	if err != nil {
		var zero T
		return zero, err
	}
	if c.clients == nil || len(c.clients) >= MaxCachedClients {
		c.clients = map[string]T{}
	}
	c.clients[key] = client
	return client, nil
}

// Len is the number of clients held.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}

// Key identifies every setting of opts that changes what a client does, as a hash: the
// credentials are not kept in memory as map keys. Options.Transport is not part of it: a cache
// serves callers that leave it nil.
func Key(o registry.Options) string {
	h := sha256.New()
	field := func(b []byte) {
		// Length-prefixed, so no two different settings write the same bytes.
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	insecure := byte(0)
	if o.Insecure {
		insecure = 1
	}
	h.Write([]byte{insecure})
	field([]byte(o.Credentials.Username))
	field([]byte(o.Credentials.Password))
	field([]byte(o.Credentials.Token))
	field(o.CACert)
	field([]byte(o.UserAgent))
	_ = binary.Write(h, binary.BigEndian, []int64{int64(o.Timeout), o.MaxBodyBytes, int64(o.PageSize)})
	return hex.EncodeToString(h.Sum(nil))
}
