package operators

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

func TestValidateCredentials(t *testing.T) {
	long := strings.Repeat("x", MaxCredentialLength+1)
	for _, tc := range []struct {
		name   string
		c      Credentials
		reason string
	}{
		{"basic", Credentials{Username: "u", Password: "p"}, ""},
		{"token", Credentials{Token: "t"}, ""},
		{"token with user", Credentials{Username: "u", Token: "t"}, ""},
		{"empty", Credentials{}, "required"},
		{"user alone", Credentials{Username: "u"}, "format"},
		{"password alone", Credentials{Password: "p"}, "format"},
		{"password and token", Credentials{Username: "u", Password: "p", Token: "t"}, "format"},
		{"long password", Credentials{Username: "u", Password: long}, "tooLong"},
		{"long token", Credentials{Token: long}, "tooLong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateCredentials(tc.c)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantInvalid(t, err, "chart.credentials", tc.reason)
			if strings.Contains(err.Error(), long) || (tc.c.Password != "" && strings.Contains(err.Error(), tc.c.Password+" ")) {
				t.Fatalf("error %q echoes a secret", err)
			}
		})
	}
}

func TestHTTPPrivateRepository(t *testing.T) {
	for _, tc := range []struct {
		name         string
		auth         charttest.Auth
		right, wrong Credentials
	}{
		{"basic", charttest.Auth{Username: "ci", Password: "s3cret-basic"}, Credentials{Username: "ci", Password: "s3cret-basic"}, Credentials{Username: "ci", Password: "nope"}},
		{"bearer", charttest.Auth{Token: "s3cret-token"}, Credentials{Token: "s3cret-token"}, Credentials{Token: "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := charttest.ServePrivateRepository(t, tc.auth, allVersions()...)
			c := newCharts(t, Options{})
			ctx := context.Background()
			ref := ChartRef{Repository: repo.URL, Name: chartName}

			_, err := c.Discover(ctx, ref, "")
			wantInvalid(t, err, "chart.repository", "unauthorized")
			ref.Auth = tc.wrong
			_, err = c.Discover(ctx, ref, "")
			wantInvalid(t, err, "chart.repository", "unauthorized")
			if repo.Refused() != 2 {
				t.Fatalf("refused %d requests, want 2", repo.Refused())
			}

			ref.Auth = tc.right
			got, err := c.Discover(ctx, ref, "")
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"2.0.0", "1.1.0", "1.0.0"}; !slices.Equal(versionNames(got), want) {
				t.Fatalf("versions %v, want %v", versionNames(got), want)
			}
			// The archive is on the repository's host: it gets the credentials too.
			ch, err := c.Fetch(ctx, ref, "1.1.0")
			if err != nil {
				t.Fatal(err)
			}
			if ch.Chart.Metadata.Version != "1.1.0" {
				t.Fatalf("fetched %s, want 1.1.0", ch.Chart.Metadata.Version)
			}
			p, err := c.Poll(ctx, ref, PollState{})
			if err != nil || len(p.Versions) != 3 {
				t.Fatalf("poll: %v, %+v", err, p)
			}
			p2, err := c.Poll(ctx, ref, PollState{Validators: p.Validators})
			if err != nil || !p2.NotModified {
				t.Fatalf("conditional poll with credentials: %v, %+v", err, p2)
			}
			if repo.Refused() != 2 {
				t.Fatalf("refused %d requests, want still 2", repo.Refused())
			}
		})
	}
}

func TestOCIPrivateRegistry(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithBasicAuth("pusher", "s3cret-oci"))
	for i, files := range allVersions()[:2] {
		registrytest.PushChart(t, reg.Host, "charts/"+chartName, charttest.Versions[i].Version, files, registrytest.WithPushAuth("pusher", "s3cret-oci"))
	}
	c := newCharts(t, Options{PlainHTTPRegistries: []string{reg.Host}})
	ctx := context.Background()
	ref := ChartRef{Repository: "oci://" + reg.Host + "/charts", Name: chartName}

	_, err := c.Discover(ctx, ref, "")
	wantInvalid(t, err, "chart.repository", "unauthorized")
	ref.Auth = Credentials{Username: "pusher", Password: "wrong"}
	_, err = c.Discover(ctx, ref, "")
	wantInvalid(t, err, "chart.repository", "unauthorized")
	_, err = c.Fetch(ctx, ref, "1.0.0")
	wantInvalid(t, err, "chart.repository", "unauthorized")

	ref.Auth = Credentials{Username: "pusher", Password: "s3cret-oci"}
	got, err := c.Discover(ctx, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1.1.0", "1.0.0"}; !slices.Equal(versionNames(got), want) {
		t.Fatalf("versions %v, want %v", versionNames(got), want)
	}
	ch, err := c.Fetch(ctx, ref, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Chart.Metadata.Version != "1.0.0" || ch.Version.Digest != got[1].Digest {
		t.Fatalf("fetched %s %s, want 1.0.0 %s", ch.Chart.Metadata.Version, ch.Version.Digest, got[1].Digest)
	}
}
