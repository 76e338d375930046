package localcluster

import (
	"path/filepath"
	"strconv"
)

// Settings every component shares. The service range is configuration only:
// nothing routes traffic to it.
const (
	serviceClusterIPRange = "10.0.0.0/24"
	podCIDR               = "10.244.0.0/16"
	serviceAccountIssuer  = "https://kubernetes.default.svc.cluster.local"
	// nodeLeaseSeconds is the simulated Node's lease duration, the
	// kubelet's default; kwok renews it every quarter of that.
	nodeLeaseSeconds = 40
)

// component is one control-plane process to start.
type component struct {
	name string
	args []string
}

// layout is where one cluster's files are.
type layout struct {
	stateDir string
	binDir   string
	pki      pki
}

func (l layout) kubeconfig() string { return filepath.Join(l.stateDir, kubeconfigName) }
func (l layout) logs() string       { return filepath.Join(l.stateDir, logsDir) }
func (l layout) bin(name string) string {
	return filepath.Join(l.binDir, name)
}

func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// components returns the processes of a cluster in start order: etcd and
// kube-apiserver first (Up waits for them before it starts the others).
func components(l layout, p ports, minimal bool) []component {
	etcdClient := "http://" + loopback(p.EtcdClient)
	etcdPeer := "http://" + loopback(p.EtcdPeer)
	out := []component{{
		name: "etcd",
		args: []string{
			"--name=default",
			"--data-dir=" + filepath.Join(l.stateDir, etcdDir),
			"--listen-client-urls=" + etcdClient,
			"--advertise-client-urls=" + etcdClient,
			"--listen-peer-urls=" + etcdPeer,
			"--initial-advertise-peer-urls=" + etcdPeer,
			"--initial-cluster=default=" + etcdPeer,
			"--initial-cluster-state=new",
			// A throw-away development store: durability buys nothing here,
			// and fsync dominates write latency on small machines.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=8589934592",
			"--log-level=warn",
		},
	}, {
		name: "kube-apiserver",
		args: []string{
			"--etcd-servers=" + etcdClient,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.APIServer),
			"--cert-dir=" + l.pki.dir,
			"--tls-cert-file=" + l.pki.path(servingCert),
			"--tls-private-key-file=" + l.pki.path(servingKey),
			"--client-ca-file=" + l.pki.path(caCert),
			"--token-auth-file=" + l.pki.path(tokenAuthFile),
			"--authorization-mode=RBAC",
			"--service-account-issuer=" + serviceAccountIssuer,
			"--service-account-key-file=" + l.pki.path(saPublicKey),
			"--service-account-signing-key-file=" + l.pki.path(saPrivateKey),
			"--service-cluster-ip-range=" + serviceClusterIPRange,
			// The "kubernetes" Service's endpoints would point at 127.0.0.1,
			// which Endpoints validation rejects; nothing in-cluster needs it.
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true",
			// Profiling is on for a local development cluster: `kubectl get
			// --raw /debug/pprof/profile` needs admin credentials anyway.
			"--profiling=true",
		},
	}}
	if minimal {
		return out
	}
	kubeconfig := "--kubeconfig=" + l.kubeconfig()
	return append(out, component{
		name: "kube-controller-manager",
		args: []string{
			kubeconfig,
			"--controllers=*,-serviceaccount-token",
			"--use-service-account-credentials=false",
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.Controllers),
			"--service-account-private-key-file=" + l.pki.path(saPrivateKey),
			"--root-ca-file=" + l.pki.path(caCert),
			"--cluster-signing-cert-file=" + l.pki.path(caCert),
			"--cluster-signing-key-file=" + l.pki.path(caKey),
			"--service-cluster-ip-range=" + serviceClusterIPRange,
			"--allocate-node-cidrs=false",
			// Garbage collection and namespace deletion are request-bound;
			// the defaults (20/30) make tests wait.
			"--kube-api-qps=200",
			"--kube-api-burst=400",
		},
	}, component{
		name: "kube-scheduler",
		args: []string{
			kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.Scheduler),
			"--kube-api-qps=200",
			"--kube-api-burst=400",
		},
	}, component{
		name: "kwok",
		args: []string{
			kubeconfig,
			"--config=" + l.bin(stagesFile),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=fake",
			"--server-address=" + loopback(p.Kwok),
			"--cidr=" + podCIDR,
			"--node-ip=127.0.0.1",
			// kwok renews the Node's Lease in kube-node-lease, the heartbeat
			// the node lifecycle controller watches; without it the Node
			// goes NotReady after the grace period and its Pods lose Ready.
			"--node-lease-duration-seconds=" + strconv.Itoa(nodeLeaseSeconds),
		},
	})
}
