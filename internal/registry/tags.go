package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"
)

// maxTagPages bounds how many pages one ListTags follows, so a registry whose pagination never
// ends cannot keep an operation running forever.
const maxTagPages = 1000

// tagPattern is the OCI distribution spec's grammar of a tag.
var tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// TagList is the answer of ListTags.
type TagList struct {
	// Tags are the repository's tags in the registry's order, without duplicates. Names that
	// are not valid OCI tags are dropped.
	Tags []string
	// ETag is the validator to pass to the next ListTags. It is set only when the registry sent
	// one and the whole list came in one page: a first page that has not changed says nothing
	// about the pages after it.
	ETag string
	// NotModified is true when the registry answered 304 to the ETag given: Tags is then nil
	// and the caller's previous list still holds.
	NotModified bool
	// Requests is how many HTTP requests the call made (pages, token exchanges, redirects,
	// retries after a challenge). It is set even when ListTags fails.
	Requests int
}

// ListTags lists the tags of repository (host[:port]/path, without tag or digest) with
// GET /v2/<name>/tags/list. It follows Link headers with rel="next"; when a page holds exactly
// the n tags asked for and has no Link, it asks for the page after the last tag (n and last
// parameters). A registry that ignores n (distribution 2.8 does) answers all tags at once; one
// that refuses it with 400 is asked again without it. With a
// non-empty etag the first request carries If-None-Match, and a 304 answer returns NotModified
// without reading anything.
func (c *Client) ListTags(ctx context.Context, repository, etag string) (TagList, error) {
	repo, err := name.NewRepository(repository)
	if err != nil {
		return TagList{}, &Error{Op: OpListTags, Repository: repository, Message: "invalid repository reference", Err: err}
	}
	o, err := c.begin(ctx, OpListTags, repo)
	if err != nil {
		return TagList{}, err
	}
	defer c.end(o)
	list, err := c.listTags(o, etag)
	list.Requests = o.requestCount()
	return list, err
}

func (c *Client) listTags(o *operation, etag string) (TagList, error) {
	base, err := url.Parse(c.baseURL(o.repo) + "/tags/list")
	if err != nil {
		return TagList{}, o.errorf(0, err, "building URL")
	}
	pageSize := c.pageSize
	first := *base
	if pageSize > 0 {
		first.RawQuery = url.Values{"n": {strconv.Itoa(pageSize)}}.Encode()
	}

	var (
		list     TagList
		seen     = map[string]bool{}
		visited  = map[string]bool{}
		next     = first.String()
		prevLast string
	)
	for page := 0; next != ""; page++ {
		if page == maxTagPages {
			return list, o.errorf(0, nil, "tag list has more than %d pages", maxTagPages)
		}
		if visited[next] {
			return list, o.errorf(0, nil, "tag list pagination loops back to %s", next)
		}
		visited[next] = true

		header := http.Header{"Accept": {"application/json"}}
		if page == 0 && etag != "" {
			header.Set("If-None-Match", etag)
		}
		resp, err := c.send(o, http.MethodGet, next, header)
		if err != nil {
			return list, err
		}
		if page == 0 && etag != "" && resp.StatusCode == http.StatusNotModified {
			_ = resp.Body.Close()
			list.NotModified = true
			list.ETag = etag
			if fresh := resp.Header.Get("ETag"); fresh != "" {
				list.ETag = fresh
			}
			return list, nil
		}
		if resp.StatusCode == http.StatusBadRequest && page == 0 && pageSize > 0 {
			// Some registries refuse an n above their own maximum: ask again without it and
			// rely on Link headers alone.
			_ = c.responseError(o, resp)
			pageSize = 0
			next = base.String()
			page = -1
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return list, c.responseError(o, resp)
		}
		if page == 0 {
			list.ETag = resp.Header.Get("ETag")
		}
		pageURL := resp.Request.URL
		link, hasLink := parseLinkNext(resp.Header.Values("Link"))
		body, err := c.readBody(o, resp, c.maxBodyBytes)
		if err != nil {
			return list, err
		}
		var doc struct {
			Tags []string `json:"tags"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return list, o.errorf(http.StatusOK, nil, "malformed tag list: %s", describeJSONError(err))
		}
		for _, t := range doc.Tags {
			if !seen[t] && tagPattern.MatchString(t) {
				seen[t] = true
				list.Tags = append(list.Tags, t)
			}
		}

		next = ""
		switch {
		case hasLink:
			u, err := nextPageURL(base, pageURL, link)
			if err != nil {
				return list, o.errorf(0, err, "following the tag list's Link header")
			}
			next = u
		case pageSize > 0 && len(doc.Tags) == pageSize:
			last := doc.Tags[len(doc.Tags)-1]
			if last == prevLast {
				break // the registry ignores last: this page repeats the previous one
			}
			prevLast = last
			u := *base
			u.RawQuery = url.Values{"n": {strconv.Itoa(pageSize)}, "last": {last}}.Encode()
			next = u.String()
		}
		if next != "" {
			list.ETag = "" // see TagList.ETag
		}
	}
	return list, nil
}

// nextPageURL resolves a Link target against the page it came with and insists that it stays on
// the registry's scheme and host: credentials are sent with the next page.
func nextPageURL(base, page *url.URL, link string) (string, error) {
	ref, err := url.Parse(link)
	if err != nil {
		return "", err
	}
	u := page.ResolveReference(ref)
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return "", &url.Error{Op: "follow", URL: u.Redacted(), Err: errOtherHost}
	}
	u.Fragment = ""
	return u.String(), nil
}
