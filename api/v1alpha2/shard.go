package v1alpha2

// Sharding: several managers, each reconciling the BundleDeployments of
// one shard (docs/ha.md, "Shards").
const (
	// LabelShard on a BundleDeployment names the shard whose manager
	// (started with --shard NAME) reconciles it; without the label, the
	// manager started without --shard does. The BundleDeployment's
	// Bundles carry the same label, copied when they are created and
	// moved with it when it is relabelled. On a Lease in rukpak-system,
	// it names the shard whose running manager renews the Lease.
	LabelShard = "core.rukpak.io/shard"

	// TypeShardAvailable is False on a BundleDeployment whose
	// core.rukpak.io/shard label names a shard no running manager serves
	// (reason ShardNotRunning): nothing reconciles it, its objects stay
	// as they were last applied. It is written by the manager started
	// without --shard and removed by the manager that takes the
	// BundleDeployment; it is never True.
	TypeShardAvailable = "ShardAvailable"
	// ReasonShardNotRunning: no manager of the shard the label names has
	// renewed its shard Lease within the Lease's duration.
	ReasonShardNotRunning = "ShardNotRunning"
)
