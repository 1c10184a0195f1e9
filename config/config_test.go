package config

import (
	"strings"
	"testing"
)

func TestWebhookConfigurations_PointAtTheServiceOrALocalURL(t *testing.T) {
	m, v, err := WebhookConfigurations("")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Webhooks) == 0 || len(v.Webhooks) == 0 {
		t.Fatalf("want webhooks in both configurations, got %d mutating and %d validating", len(m.Webhooks), len(v.Webhooks))
	}
	for _, w := range m.Webhooks {
		if w.ClientConfig.Service == nil || w.ClientConfig.URL != nil {
			t.Errorf("%s: want a Service reference, got %+v", w.Name, w.ClientConfig)
		}
	}

	m, v, err = WebhookConfigurations("https://localhost:9443")
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range []struct {
		name string
		url  *string
		svc  bool
	}{{m.Webhooks[0].Name, m.Webhooks[0].ClientConfig.URL, m.Webhooks[0].ClientConfig.Service != nil},
		{v.Webhooks[0].Name, v.Webhooks[0].ClientConfig.URL, v.Webhooks[0].ClientConfig.Service != nil}} {
		if cc.url == nil || !strings.HasPrefix(*cc.url, "https://localhost:9443/") || cc.svc {
			t.Errorf("%s: want a URL under https://localhost:9443/ and no Service, got %v", cc.name, cc.url)
		}
	}
}
