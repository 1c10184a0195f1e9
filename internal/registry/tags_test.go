package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestListTags_FollowsLinkHeaders(t *testing.T) {
	pages := map[string]struct {
		tags string
		link string
	}{
		"":      {`["1.0.0","1.1.0"]`, `</v2/org/app/tags/list?last=1.1.0&n=2>; rel="next"`},
		"1.1.0": {`["1.2.0","2.0.0"]`, `<%s/v2/org/app/tags/list?last=2.0.0&n=2>; rel="next"`},
		"2.0.0": {`["2.1.0"]`, ""},
	}
	var srv *testServer
	srv = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/org/app/tags/list" {
			http.NotFound(w, r)
			return
		}
		p := pages[r.URL.Query().Get("last")]
		if p.link != "" {
			w.Header().Set("Link", strings.ReplaceAll(p.link, "%s", srv.URL))
		}
		w.Header().Set("ETag", `"page"`)
		writeJSON(w, 200, `{"name":"org/app","tags":`+p.tags+`}`)
	})
	c := newTestClient(t, withPageSize(2))

	got, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	want := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0"}
	if !reflect.DeepEqual(got.Tags, want) {
		t.Errorf("Tags = %v, want %v", got.Tags, want)
	}
	if got.Requests != 3 {
		t.Errorf("Requests = %d, want 3", got.Requests)
	}
	if got.ETag != "" {
		t.Errorf("ETag = %q for a paginated list, want none", got.ETag)
	}
	if n := srv.seen()[0].URL.Query().Get("n"); n != "2" {
		t.Errorf("first page asked n=%q, want 2", n)
	}
}

func TestListTags_FallsBackToLastWhenAFullPageHasNoLink(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		last := r.URL.Query().Get("last")
		var page []string
		for _, tag := range all {
			if tag > last && len(page) < 2 {
				page = append(page, `"`+tag+`"`)
			}
		}
		writeJSON(w, 200, `{"tags":[`+strings.Join(page, ",")+`]}`)
	})
	c := newTestClient(t, withPageSize(2))

	got, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if !reflect.DeepEqual(got.Tags, all) {
		t.Errorf("Tags = %v, want %v", got.Tags, all)
	}
	if got.Requests != 3 {
		t.Errorf("Requests = %d, want 3 (a, b | c, d | e)", got.Requests)
	}
}

func TestListTags_StopsWhenTheRegistryIgnoresLast(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"tags":["a","b"]}`)
	})
	c := newTestClient(t, withPageSize(2))

	got, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if !reflect.DeepEqual(got.Tags, []string{"a", "b"}) || got.Requests != 2 {
		t.Errorf("got %v after %d requests, want [a b] after 2", got.Tags, got.Requests)
	}
}

func TestListTags_RefusesLinksToAnotherHostAndLoops(t *testing.T) {
	for name, link := range map[string]string{
		"other host":   `<http://elsewhere.example/v2/org/app/tags/list?last=a>; rel="next"`,
		"https switch": `<https://%s/v2/org/app/tags/list?last=a>; rel="next"`,
		"loop":         `</v2/org/app/tags/list?n=1000>; rel="next"`,
	} {
		t.Run(name, func(t *testing.T) {
			var srv *testServer
			srv = newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", strings.ReplaceAll(link, "%s", srv.host()))
				writeJSON(w, 200, `{"tags":["a"]}`)
			})
			c := newTestClient(t)
			_, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
			if err == nil {
				t.Fatal("ListTags succeeded, want an error")
			}
			if len(srv.seen()) > 2 {
				t.Errorf("made %d requests, want at most 2", len(srv.seen()))
			}
		})
	}
}

func TestListTags_ETagRevalidation(t *testing.T) {
	const etag = `"sha256:abc"`
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeJSON(w, 200, `{"tags":["1.0.0"]}`)
	})
	c := newTestClient(t)

	first, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if first.ETag != etag || first.NotModified || len(first.Tags) != 1 {
		t.Fatalf("first list = %+v, want one tag and ETag %s", first, etag)
	}
	second, err := c.ListTags(ctx(t), srv.host()+"/org/app", first.ETag)
	if err != nil {
		t.Fatalf("ListTags with ETag: %v", err)
	}
	if !second.NotModified || second.Tags != nil || second.ETag != etag || second.Requests != 1 {
		t.Errorf("revalidation = %+v, want NotModified with the same ETag after 1 request", second)
	}
	if got := srv.seen()[0].Header.Get("If-None-Match"); got != "" {
		t.Errorf("first request sent If-None-Match %q, want none", got)
	}
}

func TestListTags_FailsClearly(t *testing.T) {
	huge := `{"tags":["` + strings.Repeat("a", 2<<20) + `"]}`
	tests := map[string]struct {
		handler http.HandlerFunc
		opts    []func(*Options)
		check   func(error) bool
		want    string
	}{
		"malformed JSON": {
			handler: func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"tags":["a",`) },
			check:   func(err error) bool { return !IsRetryable(err) },
			want:    "malformed tag list",
		},
		"body over the limit with Content-Length": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
				writeJSON(w, 200, huge)
			},
			opts:  []func(*Options){withMaxBody(1 << 20)},
			check: func(err error) bool { return errors.Is(err, errBodyTooLarge) && !IsRetryable(err) },
			want:  "response of 2097165 bytes exceeds the limit of 1048576 bytes",
		},
		"body over the limit streamed": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(200)
				for i := 0; i < 64; i++ {
					if _, err := w.Write([]byte(strings.Repeat(" ", 64<<10))); err != nil {
						return
					}
				}
			},
			opts:  []func(*Options){withMaxBody(1 << 20)},
			check: func(err error) bool { return errors.Is(err, errBodyTooLarge) && !IsRetryable(err) },
			want:  "exceeds the limit",
		},
		"unknown repository": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 404, `{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}`)
			},
			check: func(err error) bool { return IsNotFound(err) && !IsRetryable(err) },
			want:  "404 Not Found: NAME_UNKNOWN: repository name not known to registry",
		},
		"server error": {
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "upstream broke", 500) },
			check:   IsRetryable,
			want:    "500 Internal Server Error: upstream broke",
		},
		"rate limited": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "17")
				writeJSON(w, 429, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`)
			},
			check: func(err error) bool {
				d, ok := RetryAfter(err)
				return IsRetryable(err) && ok && d == 17*time.Second
			},
			want: "retry after 17s",
		},
		"timeout": {
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			opts:    []func(*Options){withTimeout(100 * time.Millisecond)},
			check:   func(err error) bool { return IsRetryable(err) && errors.Is(err, context.DeadlineExceeded) },
			want:    "no complete response within 100ms",
		},
		"forbidden": {
			handler: func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 403, `{"errors":[{"code":"DENIED"}]}`) },
			check:   func(err error) bool { return IsAuth(err) && !IsRetryable(err) },
			want:    "403 Forbidden: DENIED",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newTestServer(t, tt.handler)
			c := newTestClient(t, tt.opts...)
			list, err := c.ListTags(ctx(t), srv.host()+"/org/app", "")
			if err == nil {
				t.Fatalf("ListTags = %+v, want an error", list)
			}
			if !tt.check(err) {
				t.Errorf("error %q (%T) fails the check", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if list.Requests != 1 {
				t.Errorf("Requests = %d, want 1 even on failure", list.Requests)
			}
		})
	}
}

func TestListTags_DropsInvalidTagsAndDuplicates(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"tags":["1.0.0","../etc","1.0.0","-x","`+strings.Repeat("a", 129)+`","v2",null]}`)
	})
	got, err := newTestClient(t).ListTags(ctx(t), srv.host()+"/org/app", "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if want := []string{"1.0.0", "v2"}; !reflect.DeepEqual(got.Tags, want) {
		t.Errorf("Tags = %q, want %q", got.Tags, want)
	}
}

func TestListTags_RejectsBadInput(t *testing.T) {
	c := newTestClient(t)
	for _, repo := range []string{"", "UPPER/case", "host:port:x/repo", "ghcr.io/org/app:tag", "ghcr.io/org/app@sha256:00"} {
		if _, err := c.ListTags(ctx(t), repo, ""); err == nil {
			t.Errorf("ListTags(%q) succeeded, want an error", repo)
		}
	}
}

func TestListTags_CallerCancellationIsNotRetryable(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c := newTestClient(t)
	cctx, cancel := contextWithCancel(t)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := c.ListTags(cctx, srv.host()+"/org/app", "")
	if err == nil || IsRetryable(err) {
		t.Errorf("error = %v, want a non-retryable cancellation", err)
	}
}
