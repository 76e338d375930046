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
// included) with vals, as helm template does: missing values render empty
// and DNS lookups answer "". lookup is answered by lk; when lk recorded
// queries it could not answer, render returns a *format.LookupsNeeded
// naming them instead of the output or of a template error (a template
// may have failed only because an answer was empty). It returns the
// output by template path (chart/templates/x.yaml,
// chart/charts/sub/templates/y.yaml) without partials and NOTES.txt.
func render(ctx context.Context, ch *chart.Chart, vals common.Values, limits Limits, lk *lookups) (map[string]string, error) {
	e := engine.Engine{
		CustomTemplateFuncs: template.FuncMap{"lookup": lk.lookup},
	}
	files, err := e.RenderWithContext(ctx, ch, vals)
	if needed := lk.needed(); needed != nil {
		return nil, needed
	}
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
