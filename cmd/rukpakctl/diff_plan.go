package main

import (
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/servingcert"
)

// diffConcurrency is how many objects diff dry-runs at once.
const diffConcurrency = 8

// newDiffEngine returns an apply engine set up as the manager's (its field
// manager, owner kind and keys: planner.EngineOptions) that reads and
// dry-runs through cl as the user of the kubeconfig. It never writes: diff
// uses only Prepare, DryRun and Prunable.
func newDiffEngine(cl *cluster) *apply.Engine {
	opts := planner.EngineOptions()
	opts.Concurrency = diffConcurrency
	return apply.New(cl.client, cl.client, nil, cl.client.RESTMapper(), opts)
}

// diffCerts is how diff fills in the serving certificates objects ask for
// (registry+v1 webhooks and API services), as the manager does: the live
// certificate Secrets of namespace, read with r, are kept while good, and
// new certificates are issued where they are missing or due (a change the
// diff shows). A user who may not read those Secrets is told on stderr
// that the certificates shown are new ones.
func diffCerts(stderr io.Writer, r client.Reader, namespace string) planner.Certs {
	return planner.Certs{
		Reader:  func() (client.Reader, error) { return r, nil },
		Options: servingcert.DefaultOptions(),
		Unreadable: func(err error) {
			fmt.Fprintf(stderr, "note: the serving certificate Secrets of namespace %s cannot be read (%v): new certificates are shown\n", namespace, err)
		},
	}
}
