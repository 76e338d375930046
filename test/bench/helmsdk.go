package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// benchChart is a chart of objects ConfigMaps, named after the release,
// with the content of a rukpak bench bundle.
func benchChart(objects int) *chart.Chart {
	var b strings.Builder
	for j := 0; j < objects; j++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-o%d\ndata:\n  index: \"%d\"\n", j, j)
	}
	return &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "bench", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/configmaps.yaml", Data: []byte(b.String()), ModTime: time.Now()}},
	}
}

// helmSDKRun installs, in this process, c.bundles releases of benchChart
// with Helm's action.Install on c.concurrency goroutines, as Flux's
// helm-controller drives it: one action.Configuration per release over a
// shared in-memory discovery cache, releases stored as Secrets, server-side
// apply (Helm 4's default), no wait beyond hooks (the CLI's default; the
// ConfigMaps are ready when written). It returns once every release is
// deployed.
func helmSDKRun(ctx context.Context, c config, cfg *rest.Config, kubeconfig string) error {
	getter, err := newMemoryGetter(cfg, kubeconfig)
	if err != nil {
		return err
	}
	ch := benchChart(c.objects)
	return parallel(c.bundles, c.concurrency, func(i int) error {
		ns := fmt.Sprintf("helmsdk-%d", i%c.namespaces)
		ac := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
		if err := ac.Init(getter.forNamespace(ns), ns, "secret"); err != nil {
			return fmt.Errorf("helm configuration: %w", err)
		}
		in := action.NewInstall(ac)
		in.ReleaseName, in.Namespace = fmt.Sprintf("b%d", i), ns
		in.WaitStrategy = kube.HookOnlyStrategy
		in.Timeout = 5 * time.Minute
		if _, err := in.RunWithContext(ctx, ch, map[string]any{}); err != nil {
			return fmt.Errorf("helm install %s: %w", in.ReleaseName, err)
		}
		return nil
	})
}

// memoryGetter is a genericclioptions.RESTClientGetter over one REST
// config whose discovery and REST mapping are cached in memory and shared
// by every release (Helm's own getter caches discovery on disk).
type memoryGetter struct {
	cfg        *rest.Config
	kubeconfig string
	discovery  discovery.CachedDiscoveryInterface
	mapper     meta.RESTMapper
	namespace  string
}

func newMemoryGetter(cfg *rest.Config, kubeconfig string) (*memoryGetter, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	return &memoryGetter{cfg: cfg, kubeconfig: kubeconfig, discovery: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

func (g *memoryGetter) forNamespace(ns string) *memoryGetter {
	out := *g
	out.namespace = ns
	return &out
}

func (g *memoryGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *memoryGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *memoryGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *memoryGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: g.kubeconfig},
		&clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}
