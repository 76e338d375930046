package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmlookup "github.com/rukpak/rukpak/internal/lookup"
	"github.com/rukpak/rukpak/pkg/format"
)

// renderAnswered renders with Helm's lookups answered from cl, as the
// user rukpakctl runs as (the manager answers them as the install
// identity; package lookup, with the same bounds): a chart that keeps a
// generated password or certificate in a Secret it looks up renders with
// the live value, as the manager would render it, so that diff does not
// show it changed. Without a cluster, or when the lookups cannot be
// answered (that user may not read what the chart looks up, say), it
// renders offline (renderOffline) and says why on stderr.
func renderAnswered(ctx context.Context, stderr io.Writer, cl *cluster, f format.Format, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	if cl == nil {
		return renderOffline(ctx, stderr, f, fsys, cfg)
	}
	objs, _, err := helmlookup.Render(ctx, f, fsys, cfg, helmlookup.NewResolver(cl.client, cl.client.RESTMapper(), helmlookup.DefaultLimits()))
	if err == nil {
		return objs, nil
	}
	fmt.Fprintf(stderr, "note: the chart's lookups could not be answered from the cluster (%v)\n", err)
	return renderOffline(ctx, stderr, f, fsys, cfg)
}
