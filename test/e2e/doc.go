// Package e2e runs rukpak end to end: it builds the manager and rukpakctl,
// starts a full local cluster with `rukpakctl local up` (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and a
// kwok-simulated node, so Deployments become Available) and drives it the
// way a user does, with kubectl and the Kubernetes API.
package e2e
