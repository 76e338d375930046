package helm

import (
	"fmt"
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// DefaultAPIVersions returns the API versions a chart sees as served when
// Config.Capabilities is nil or lists none: Helm's defaults, those of helm
// template (the built-in groups of client-go, as "group/version").
func DefaultAPIVersions() []string {
	return slices.Clone(common.DefaultVersionSet)
}

// capabilities returns Helm's .Capabilities for c: Helm's defaults (those
// of helm template) when c is nil, else c's version and API versions, each
// defaulted when empty.
func capabilities(c *format.Capabilities) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if c == nil {
		return caps, nil
	}
	if c.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(c.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("parsing the cluster's version %q: %w", c.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if len(c.APIVersions) > 0 {
		caps.APIVersions = common.VersionSet(slices.Clone(c.APIVersions))
	}
	return caps, nil
}

// checkKubeVersion refuses a chart whose kubeVersion constraint the
// cluster's version does not meet.
func checkKubeVersion(ch *chart.Chart, caps *common.Capabilities) error {
	constraint := ch.Metadata.KubeVersion
	if constraint == "" || chartutil.IsCompatibleRange(constraint, caps.KubeVersion.String()) {
		return nil
	}
	return failure.New(v1alpha2.ReasonInvalidContent,
		"chart %s requires kubeVersion %q, which Kubernetes %s does not meet",
		ch.Name(), constraint, caps.KubeVersion.Version)
}

// renderValues returns what templates see as their top-level object:
// .Values (user values over the chart's defaults, coalesced as Helm does,
// after disabling subcharts by their conditions and tags), .Release,
// .Chart and .Capabilities.
//
// .Release is an install (IsInstall true) or, when cfg.Release.IsUpgrade
// is set, an upgrade, of revision cfg.Release.Revision (1 when unset), as
// helm install and helm upgrade render it.
func renderValues(ch *chart.Chart, cfg format.Config, caps *common.Capabilities) (common.Values, error) {
	if err := chartutil.ProcessDependencies(ch, cfg.Values); err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "processing the dependencies of chart %s: %v", ch.Name(), err)
	}
	vals, err := util.CoalesceValues(ch, cfg.Values)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "merging values over the defaults of chart %s: %v", ch.Name(), err)
	}
	if err := validateValues(ch, vals); err != nil {
		return nil, err
	}
	opts := common.ReleaseOptions{
		Name:      cfg.ReleaseName,
		Namespace: cfg.InstallNamespace,
		Revision:  cfg.Release.RevisionOrFirst(),
		IsInstall: !cfg.Release.IsUpgrade,
		IsUpgrade: cfg.Release.IsUpgrade,
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, cfg.Values, opts, caps, true)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "merging values over the defaults of chart %s: %v", ch.Name(), err)
	}
	return top, nil
}
