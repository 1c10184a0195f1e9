package receiver

// Realistic notification bodies shared by the parser, handler and benchmark tests. The fuzz seed
// corpus in testdata/fuzz/FuzzParse holds the same documents.

// distributionPush is a distribution notification for a manifest pushed by tag.
const distributionPush = `{
  "events": [
    {
      "id": "6b0c4d3e-27a1-4f0e-9a55-0f4f1c2b9e10",
      "timestamp": "2026-03-02T10:15:04.118220631Z",
      "action": "push",
      "target": {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": "sha256:5b0f1c6e0d0a4f6f5bb1e4bba2b1cd0e9d3e7d9a1f0f2b3c4d5e6f708192a3b4",
        "size": 1083,
        "length": 1083,
        "repository": "org/bundle",
        "url": "http://registry.example.com:5000/v2/org/bundle/manifests/sha256:5b0f1c6e0d0a4f6f5bb1e4bba2b1cd0e9d3e7d9a1f0f2b3c4d5e6f708192a3b4",
        "tag": "1.2.3"
      },
      "request": {
        "id": "f1c3a0de-95b1-4c09-8a1a-0f0d2a6c3b77",
        "addr": "10.0.4.17:51122",
        "host": "registry.example.com:5000",
        "method": "PUT",
        "useragent": "werf/2.10 containerd/2.0"
      },
      "actor": {"name": "ci"},
      "source": {"addr": "registry-6d9f7c5b8-x2x7q:5000", "instanceID": "0f3a2b1c-6d5e-4f7a-8b9c-0d1e2f3a4b5c"}
    }
  ]
}`

// distributionMixed has a blob push, a pull, a push by digest, a tag push to a local registry
// whose host is only in target.url, and that same tag push again.
const distributionMixed = `{"events":[
 {"action":"push","target":{"mediaType":"application/octet-stream","digest":"sha256:aa","repository":"demo/app","url":"http://127.0.0.1:5001/v2/demo/app/blobs/sha256:aa"},"request":{"host":"127.0.0.1:5001"}},
 {"action":"pull","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"demo/app","tag":"0.1.0"},"request":{"host":"127.0.0.1:5001"}},
 {"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bb","repository":"demo/app"},"request":{"host":"127.0.0.1:5001"}},
 {"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"demo/app","tag":"0.2.0","url":"http://127.0.0.1:5001/v2/demo/app/manifests/sha256:cc"},"request":{}},
 {"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"demo/app","tag":"0.2.0"},"request":{"host":"127.0.0.1:5001"}}
]}`

// harborPush is Harbor's Default payload for a pushed artifact.
const harborPush = `{
  "type": "PUSH_ARTIFACT",
  "occur_at": 1772446504,
  "operator": "robot$ci",
  "event_data": {
    "resources": [
      {
        "digest": "sha256:0d9a3c1e7f5b4a2c8e6d0f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c",
        "tag": "1.2.3",
        "resource_url": "harbor.example.com/project/repo:1.2.3"
      }
    ],
    "repository": {
      "date_created": 1772000000,
      "name": "repo",
      "namespace": "project",
      "repo_full_name": "project/repo",
      "repo_type": "private"
    }
  }
}`

// harborCloudEvent is Harbor's CloudEvents payload format in structured mode.
const harborCloudEvent = `{
  "specversion": "1.0",
  "id": "4f0c2d1e-8b7a-4c3d-9e2f-1a0b9c8d7e6f",
  "requestid": "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d",
  "source": "/projects/3/webhook/policies/7",
  "type": "harbor.artifact.pushed",
  "datacontenttype": "application/json",
  "time": "2026-03-02T10:15:04Z",
  "data": {
    "resources": [
      {"digest": "sha256:11", "tag": "2.0.0", "resource_url": "harbor.example.com:8443/project/repo:2.0.0"},
      {"digest": "sha256:11", "tag": "stable", "resource_url": "harbor.example.com:8443/project/repo:stable"}
    ],
    "repository": {"name": "repo", "namespace": "project", "repo_full_name": "project/repo", "repo_type": "public"}
  },
  "operator": "admin"
}`

// harborBinaryData is the body of a Harbor CloudEvent in binary mode (type in Ce-Type).
const harborBinaryData = `{"resources":[{"digest":"sha256:22","tag":"3.1.0","resource_url":"harbor.example.com/project/repo:3.1.0"}],"repository":{"name":"repo","namespace":"project","repo_full_name":"project/repo","repo_type":"private"}}`

// harborPull is a Harbor notification the receiver ignores.
const harborPull = `{"type":"PULL_ARTIFACT","occur_at":1772446504,"operator":"admin","event_data":{"resources":[{"digest":"sha256:33","tag":"1.2.3","resource_url":"harbor.example.com/project/repo:1.2.3"}],"repository":{"name":"repo","namespace":"project","repo_full_name":"project/repo"}}}`

// genericPush is the receiver's own format.
const genericPush = `{"repository":"https://ghcr.io/org/bundle","tag":"1.2.3"}`
