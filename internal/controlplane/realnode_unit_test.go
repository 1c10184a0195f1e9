package controlplane

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

func TestShellFields_IptablesRuleWithQuotedComment(t *testing.T) {
	got := shellFields(`-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -j DROP`)
	want := []string{"-A", "KUBE-FIREWALL", "!", "-s", "127.0.0.0/8", "-d", "127.0.0.0/8", "-m", "comment", "--comment",
		"block incoming localnet connections", "-j", "DROP"}
	if !slices.Equal(got, want) {
		t.Fatalf("shellFields = %q, want %q", got, want)
	}
	if got := shellFields(`-A X --comment "a \"b\" c"`); !slices.Equal(got, []string{"-A", "X", "--comment", `a "b" c`}) {
		t.Fatalf("escaped quotes: %q", got)
	}
}

// The images are OCI layout archives that name their reference, hold every blob their index
// points to, and come out byte for byte the same each time.
func TestOCIImage_ArchiveIsCompleteAndReproducible(t *testing.T) {
	if _, err := os.Stat(busyboxPath); err != nil {
		t.Fatalf("busybox-static is not installed (hack/deps.sh test installs it): %v", err)
	}
	images, err := realNodeImages()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, img := range images {
		a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
		if err := img.WriteArchive(a); err != nil {
			t.Fatal(err)
		}
		if err := img.WriteArchive(b); err != nil {
			t.Fatal(err)
		}
		da, _ := os.ReadFile(a)
		db, _ := os.ReadFile(b)
		if !bytes.Equal(da, db) {
			t.Fatalf("image %d: two archives differ", i)
		}
		files := map[string][]byte{}
		tr := tar.NewReader(bytes.NewReader(da))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(tr)
			files[h.Name] = data
		}
		var index struct {
			Manifests []struct {
				Digest      string
				Annotations map[string]string
			}
		}
		if err := json.Unmarshal(files["index.json"], &index); err != nil {
			t.Fatal(err)
		}
		if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Ref {
			t.Fatalf("index %s: want one manifest named %s", files["index.json"], img.Ref)
		}
		var manifest struct {
			Config struct{ Digest string }
			Layers []struct{ Digest string }
		}
		if err := json.Unmarshal(files["blobs/sha256/"+index.Manifests[0].Digest[len("sha256:"):]], &manifest); err != nil {
			t.Fatal(err)
		}
		for _, d := range append([]string{manifest.Config.Digest}, manifest.Layers[0].Digest) {
			blob, ok := files["blobs/sha256/"+d[len("sha256:"):]]
			if !ok || digest(blob) != d {
				t.Fatalf("blob %s missing or wrong", d)
			}
		}
	}
}

// TestCheckLocalRegistries_OnlyLoopback: a real node pulls only from a registry on this
// machine's loopback, named host:port.
func TestCheckLocalRegistries_OnlyLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:5001", "localhost:5000", "[::1]:5000"} {
		if err := checkLocalRegistries([]string{ok}); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"10.0.0.1:5000":             "loopback",
		"registry.example.com:5000": "loopback",
		"127.0.0.1":                 "want host:port",
		"http://127.0.0.1:5000":     "want host:port",
	} {
		if err := checkLocalRegistries([]string{bad}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", bad, err, want)
		}
	}
}

// TestAddInsecureRegistry_LoopbackOrTheGateway: a running node may be told of a registry on
// loopback or at its own gateway (make dev's, reached by pods there), never another address; the
// hosts.toml written sends pulls and resolves to it over plain HTTP.
func TestAddInsecureRegistry_LoopbackOrTheGateway(t *testing.T) {
	n := &RealNode{Dir: t.TempDir(), Gateway: net.ParseIP("10.251.3.1")}
	for _, ok := range []string{"10.251.3.1:5001", "127.0.0.1:5001"} {
		if err := n.AddInsecureRegistry(ok); err != nil {
			t.Fatalf("%s refused: %v", ok, err)
		}
		data, err := os.ReadFile(filepath.Join(n.Dir, "certs.d", ok, "hosts.toml"))
		if err != nil {
			t.Fatal(err)
		}
		want := "server = \"http://" + ok + "\"\n\n[host.\"http://" + ok + "\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
		if string(data) != want {
			t.Errorf("hosts.toml of %s:\n%s\nwant:\n%s", ok, data, want)
		}
	}
	if err := n.AddInsecureRegistry("10.251.4.1:5001"); err == nil || !strings.Contains(err.Error(), "gateway 10.251.3.1") {
		t.Errorf("another node's gateway: error %v", err)
	}
	if _, err := os.Stat(filepath.Join(n.Dir, "certs.d", "10.251.4.1:5001")); !os.IsNotExist(err) {
		t.Errorf("a refused registry got a directory: %v", err)
	}
}

// TestKubeletConfig_EveryFieldIsTheKubelets: the real node's kubelet configuration decodes
// strictly into the kubelet's own KubeletConfiguration. The kubelet only logs a field it does not
// know and goes on without it: a misspelt podLogsDir once left every node's pod logs in the
// machine's shared /var/log/pods, where each kubelet's garbage collection removed the logs of the
// other nodes' pods (a failed container's termination message then said "Error on reading
// termination message from logs").
func TestKubeletConfig_EveryFieldIsTheKubelets(t *testing.T) {
	n := &RealNode{Dir: t.TempDir(), socket: "/run/slipway-test/containerd.sock", record: nodeRecord{Cgroup: "slipway-node-test"}}
	for _, serve := range []kubeletServing{
		{address: "127.0.0.1"},
		{address: "192.0.2.7", nodeIP: "192.0.2.7", clientCA: "/tmp/kubelet-client.crt"},
	} {
		path, err := n.writeKubeletConfig(serve)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg kubeletv1beta1.KubeletConfiguration
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			t.Fatalf("the kubelet would ignore part of its configuration: %v\n%s", err, data)
		}
		if want := filepath.Join(n.Dir, "pod-logs"); cfg.PodLogsDir != want {
			t.Errorf("podLogsDir = %q, want the node's own %q", cfg.PodLogsDir, want)
		}
		authn := cfg.Authentication
		if cfg.Address != serve.address || authn.X509.ClientCAFile != serve.clientCA ||
			authn.Anonymous.Enabled == nil || *authn.Anonymous.Enabled || authn.Webhook.Enabled == nil || *authn.Webhook.Enabled {
			t.Errorf("served on %q with client CA %q, anonymous %v, webhook %v; want %q, %q, neither",
				cfg.Address, authn.X509.ClientCAFile, authn.Anonymous.Enabled, authn.Webhook.Enabled, serve.address, serve.clientCA)
		}
	}
}
