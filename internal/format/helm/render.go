package helm

import (
	"context"
	"strings"
	"text/template"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// notesFile is the template whose output is shown to the user by helm
// install; rukpak has nowhere to show it and ignores it.
const notesFile = "NOTES.txt"

// render executes the chart's templates (those of enabled subcharts
// included) with vals, as helm template does: missing values render empty,
// lookup finds nothing and DNS lookups answer "". It returns the output by
// template path (chart/templates/x.yaml, chart/charts/sub/templates/y.yaml)
// without partials and NOTES.txt.
func render(ctx context.Context, ch *chart.Chart, vals common.Values, limits Limits) (map[string]string, error) {
	e := engine.Engine{
		CustomTemplateFuncs: template.FuncMap{"lookup": lookup},
	}
	files, err := e.RenderWithContext(ctx, ch, vals)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonRenderFailed, "rendering chart %s: %s", ch.Name(), oneLine(err.Error()))
	}
	var total int64
	for name, out := range files {
		if strings.HasSuffix(name, notesFile) {
			delete(files, name)
			continue
		}
		if total += int64(len(out)); total > limits.MaxRenderedBytes {
			return nil, failure.New(v1alpha2.ReasonRenderFailed,
				"rendering chart %s: output is over the limit of %d bytes", ch.Name(), limits.MaxRenderedBytes)
		}
	}
	return files, nil
}

// oneLine joins the lines of Helm's multi-line template errors, for a
// condition message.
func oneLine(msg string) string {
	lines := strings.Split(msg, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, " ")
}

// lookup replaces Helm's lookup function: rendering never reads the
// cluster, so that a revision renders the same every time and a chart
// cannot read what its install identity could not. It finds nothing, as
// in helm template.
func lookup(_, _, _, _ string) (map[string]any, error) {
	return map[string]any{}, nil
}
