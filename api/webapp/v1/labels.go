package v1

// ShardLabel names the shard of the operator a WebApp is assigned to when the WebApp controller
// runs as several shards (--shards > 1; docs/webapp.md, Shards). The operator writes it, and copies
// it onto the WebApp's Deployment and Service (never onto its pods); a user pins WebApps together
// with shard.slipway.dev/key instead.
const ShardLabel = "shard.slipway.dev/webapp"
