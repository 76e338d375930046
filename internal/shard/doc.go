// Package shard splits BundleDeployments among several managers.
//
// A manager started with --shard NAME reconciles only the BundleDeployments
// labelled core.rukpak.io/shard=NAME, and caches only those and their
// Bundles (Selector); a manager started without it takes those without the
// label. Each shard elects its own leader (LeaderElectionID), and its
// leader announces that the shard runs by renewing a Lease of its own
// (Announcer, LeaseName).
//
// Glossary:
//
//   - shard: the value of the label; "" is the unsharded manager's.
//   - live: a shard whose Lease was renewed within its duration.
//   - unserved: a BundleDeployment whose label names a shard that is not
//     live. The unsharded manager reports those (Reporter): the condition
//     ShardAvailable=False, a warning event, the metric
//     rukpak_bundledeployments_unserved. It never reconciles them.
//   - adopt: what a manager does before its first reconcile of a
//     BundleDeployment relabelled to its shard (Adopt): it moves the
//     BundleDeployment's Bundles to the shard and clears the
//     ShardAvailable condition. Objects the BundleDeployment installed
//     are not touched: they are as the previous shard applied them.
package shard
