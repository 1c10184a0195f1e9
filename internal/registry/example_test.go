package registry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/slipway-dev/slipway/internal/registry"
)

// Example shows how a controller polls a repository: one Limiter for the whole process, a
// Client per set of credentials, and the previous ETag passed back on every poll.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(`{"name":"org/bundle","tags":["1.0.0","1.1.0"]}`))
	}))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/org/bundle"

	limiter := registry.NewLimiter(10) // shared by every client of the process
	client, err := registry.NewClient(registry.Options{Insecure: true}, limiter)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	var etag string
	for poll := 1; poll <= 2; poll++ {
		list, err := client.ListTags(ctx, repo, etag)
		switch {
		case err != nil && registry.IsRetryable(err):
			if d, ok := registry.RetryAfter(err); ok {
				fmt.Println("retry after", d)
			}
			return
		case err != nil:
			fmt.Println("giving up:", err)
			return
		case list.NotModified:
			fmt.Printf("poll %d: unchanged (%d request)\n", poll, list.Requests)
		default:
			fmt.Printf("poll %d: %v (%d request)\n", poll, list.Tags, list.Requests)
		}
		etag = list.ETag
	}
	// Output:
	// poll 1: [1.0.0 1.1.0] (1 request)
	// poll 2: unchanged (1 request)
}
