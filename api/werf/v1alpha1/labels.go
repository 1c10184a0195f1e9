package v1alpha1

// ShardLabel names the shard of the operator a WerfBundle is assigned to when the WerfBundle
// controller runs as several shards (--shards > 1; docs/werfbundle.md, Shards). The operator
// writes it; a user pins bundles together with shard.slipway.dev/key instead.
const ShardLabel = "shard.slipway.dev/werfbundle"
