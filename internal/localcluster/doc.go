// Package localcluster runs a container-free Kubernetes control plane on the
// loopback interface, for development (`rukpakctl local up`), end-to-end
// tests and benchmarks.
//
// Every component is an ordinary background process started from binaries in
// a directory (bin/cluster, built by hack/build-cluster-bins.sh) and outlives
// the program that started it: it runs in its own session and logs to
// <StateDir>/logs/<name>.log. Everything a cluster owns lives in its state
// directory, and every port is picked free at start, so several clusters (for
// example parallel test packages) can run side by side on one machine.
//
// Up is a pipeline, in order:
//
//  1. lock the state directory; if the recorded processes are all alive,
//     stop ("already up");
//  2. pick free 127.0.0.1 ports and generate a CA, the API server's serving
//     certificate, a service-account signing key and an admin client
//     certificate, and write <StateDir>/kubeconfig;
//  3. start etcd and kube-apiserver, recording each process in
//     <StateDir>/pids.json as soon as it runs, and wait for etcd's /health
//     and the API server's /readyz;
//  4. unless Options.Minimal, start kube-controller-manager, kube-scheduler
//     and kwok (which simulates the kubelet of the Node this package
//     creates) — only now: the controller manager gives the API server 10 s
//     to become healthy and exits when it has not;
//  5. install rukpak's CRDs (from package config), the rukpak-system
//     namespace, the ClusterRoles the release ships for users
//     (rukpak-uploader, rukpak-content-reader, rukpak-metrics-reader) and
//     the ServiceAccount Uploader bound to rukpak-uploader (what
//     `rukpakctl run` uploads as for the admin), and, unless minimal,
//     create Node kwok-node-0; wait for the CRDs to be Established, the
//     Node to be Ready and the controller manager and scheduler to be
//     healthy;
//  6. unless Options.NoManager, start the rukpak manager and wait for its
//     /readyz.
//
// If a step fails, Up stops everything it started. Up on a running cluster
// only installs what step 5 offers users where it is missing. Down stops the recorded
// processes (SIGTERM, then SIGKILL), verifying /proc/<pid> first so that a
// reused PID is never signalled.
//
// Each Up starts from an empty etcd and content store: a cluster's objects
// do not survive Down. No unix sockets are used, so the state directory may
// be as long a path as the file system allows.
package localcluster
