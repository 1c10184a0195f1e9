package receiver

import (
	"strings"
	"testing"
)

func TestNormalizeRepository(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// Already normalised.
		{"registry.example.com/org/bundle", "registry.example.com/org/bundle"},
		{"ghcr.io/org/bundle", "ghcr.io/org/bundle"},
		{"127.0.0.1:5001/demo/app", "127.0.0.1:5001/demo/app"},
		// Schemes, case, slashes, whitespace.
		{"https://registry.example.com/org/bundle/", "registry.example.com/org/bundle"},
		{"http://127.0.0.1:5001/demo/app", "127.0.0.1:5001/demo/app"},
		{"HTTPS://Registry.Example.COM/org/bundle", "registry.example.com/org/bundle"},
		{"oci://ghcr.io/org/chart", "ghcr.io/org/chart"},
		{"  ghcr.io/org/bundle  ", "ghcr.io/org/bundle"},
		{"ghcr.io//org///bundle", "ghcr.io/org/bundle"},
		{"https://user:pass@registry.example.com/org/bundle", "registry.example.com/org/bundle"},
		{"https://registry.example.com/org/bundle?x=1#frag", "registry.example.com/org/bundle"},
		// The path keeps its case; only the host is folded.
		{"GHCR.IO/Org/Bundle", "ghcr.io/Org/Bundle"},
		// Tags and digests.
		{"ghcr.io/org/bundle:1.2.3", "ghcr.io/org/bundle"},
		{"ghcr.io/org/bundle@sha256:0123abcd", "ghcr.io/org/bundle"},
		{"ghcr.io/org/bundle:1.2.3@sha256:0123abcd", "ghcr.io/org/bundle"},
		{"127.0.0.1:5001/demo/app:latest", "127.0.0.1:5001/demo/app"},
		{"harbor.example.com/project/repo:1.2.3", "harbor.example.com/project/repo"},
		// Hosts: '.', ':' or localhost in the first element.
		{"localhost/app", "localhost/app"},
		{"LOCALHOST:5000/app", "localhost:5000/app"},
		{"registry:5000/app", "registry:5000/app"},
		{"[::1]:5000/demo/app", "[::1]:5000/demo/app"},
		// Docker Hub.
		{"nginx", "docker.io/library/nginx"},
		{"nginx:1.27", "docker.io/library/nginx"},
		{"nginx@sha256:0123abcd", "docker.io/library/nginx"},
		{"org/app", "docker.io/org/app"},
		{"org/app:1.0", "docker.io/org/app"},
		{"docker.io/nginx", "docker.io/library/nginx"},
		{"docker.io/library/nginx", "docker.io/library/nginx"},
		{"index.docker.io/org/app", "docker.io/org/app"},
		{"https://index.docker.io/nginx", "docker.io/library/nginx"},
		{"registry-1.docker.io/org/app", "docker.io/org/app"},
		// Nothing that names a repository.
		{"", ""},
		{"   ", ""},
		{"https://", ""},
		{"registry.example.com", ""},
		{"registry.example.com/", ""},
		{"127.0.0.1:5001", ""},
		{"localhost:5000", ""},
		{"ghcr.io/org/bundle with space", ""},
		{"ghcr.io/org/../bundle", ""},
		{"ghcr.io/org:x/bundle", ""},
		{"ghcr.io/ørg/bundle", ""},
		{"ghcr.io/org/bundle\n", "ghcr.io/org/bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := NormalizeRepository(tt.in)
			if got != tt.want {
				t.Fatalf("NormalizeRepository(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := NormalizeRepository(got); again != got {
				t.Fatalf("NormalizeRepository is not idempotent: %q -> %q -> %q", tt.in, got, again)
			}
		})
	}
}

func TestValidTag(t *testing.T) {
	tests := []struct {
		tag  string
		want bool
	}{
		{"1.2.3", true},
		{"latest", true},
		{"v1.0.0-rc.1_build", true},
		{"_underscore", true},
		{"sha256-0123abcd.sig", true},
		{"", false},
		{".hidden", false},
		{"-dash", false},
		{"with space", false},
		{"a:b", false},
		{"a/b", false},
		{strings.Repeat("a", 129), false},
		{strings.Repeat("a", 128), true},
	}
	for _, tt := range tests {
		if got := validTag(tt.tag); got != tt.want {
			t.Errorf("validTag(%q) = %v, want %v", tt.tag, got, tt.want)
		}
	}
}

// FuzzNormalizeRepository checks that normalising twice changes nothing, which matching relies
// on. Seeds are in testdata/fuzz/FuzzNormalizeRepository.
func FuzzNormalizeRepository(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeRepository(s)
		if again := NormalizeRepository(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}
