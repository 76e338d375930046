// Package shards runs rukpak managers as shards against a real API server
// with an audit log: three shards (--shard a, b, c) and an unsharded
// manager, each as a user of its own, and BundleDeployments spread over
// them. Each BundleDeployment's objects, Bundles and status are written
// by its shard's manager alone; relabelling one to another shard moves it
// with no write to its objects, and the new shard corrects its drift; a
// label naming no running shard is reported (ShardAvailable=False)
// without anything installed, until it names a running shard; a SIGKILL
// of one shard's leader stops only that shard's drift correction, until
// its standby leads.
package shards
