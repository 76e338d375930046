package kustomize

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// kustomization checks every field of k that names a file or directory.
func (v *visit) kustomization(k *types.Kustomization) error {
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil || len(k.HelmChartInflationGenerator) > 0 {
		return failure.New(v1alpha2.ReasonUnsupportedFeature,
			"%s: helmCharts: inflating Helm charts in a kustomization is not supported; install charts with the Helm class",
			v.file)
	}
	checks := []func(*types.Kustomization) error{
		func(k *types.Kustomization) error { return v.bases("resources", k.Resources) },
		func(k *types.Kustomization) error { return v.bases("bases", k.Bases) },
		func(k *types.Kustomization) error { return v.bases("components", k.Components) },
		func(k *types.Kustomization) error { return v.files("crds", k.Crds...) },
		func(k *types.Kustomization) error { return v.files("configurations", k.Configurations...) },
		v.patches,
		v.generatorSources,
		func(k *types.Kustomization) error { return v.plugins("generators", k.Generators) },
		func(k *types.Kustomization) error { return v.plugins("transformers", k.Transformers) },
		func(k *types.Kustomization) error { return v.plugins("validators", k.Validators) },
	}
	for _, check := range checks {
		if err := check(k); err != nil {
			return err
		}
	}
	if p, ok := k.OpenAPI["path"]; ok {
		return v.files("openapi.path", p)
	}
	return nil
}

// patches checks the files of patches, patchesJson6902,
// patchesStrategicMerge and replacements.
func (v *visit) patches(k *types.Kustomization) error {
	for i, p := range k.Patches {
		if err := v.optionalFile(field("patches", i, "path"), p.Path); err != nil {
			return err
		}
	}
	for i, p := range k.PatchesJson6902 {
		if err := v.optionalFile(field("patchesJson6902", i, "path"), p.Path); err != nil {
			return err
		}
	}
	for i, r := range k.Replacements {
		if err := v.optionalFile(field("replacements", i, "path"), r.Path); err != nil {
			return err
		}
	}
	for _, p := range k.PatchesStrategicMerge {
		// kustomize reads an entry as a patch first and as a path only if
		// that fails.
		if res, err := v.c.rf.SliceFromBytes([]byte(p)); err == nil && len(res) > 0 {
			continue
		}
		if err := v.files("patchesStrategicMerge", string(p)); err != nil {
			return err
		}
	}
	return nil
}

// optionalFile checks the file entry of field if it is set.
func (v *visit) optionalFile(field, entry string) error {
	if entry == "" {
		return nil
	}
	return v.files(field, entry)
}

// generatorSources checks the files and env files of configMapGenerator
// and secretGenerator.
func (v *visit) generatorSources(k *types.Kustomization) error {
	for i, g := range k.ConfigMapGenerator {
		if err := v.kvSources(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources); err != nil {
			return err
		}
	}
	for i, g := range k.SecretGenerator {
		if err := v.kvSources(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources); err != nil {
			return err
		}
	}
	return nil
}

// kvSources checks the files of a generator of the list item named at.
func (v *visit) kvSources(at string, s types.KvPairSources) error {
	for _, f := range s.FileSources {
		// "key=path" or "path".
		_, p, found := strings.Cut(f, "=")
		if !found {
			p = f
		}
		if isRemote(f) {
			p = f
		}
		if err := v.files(at+".files", p); err != nil {
			return err
		}
	}
	if err := v.files(at+".envs", s.EnvSources...); err != nil {
		return err
	}
	return v.optionalFile(at+".env", s.EnvSource)
}

// plugins checks the entries of generators, transformers or validators:
// inline configurations or files holding them. A directory is refused: the
// configurations it builds are only known after a build.
func (v *visit) plugins(field string, entries []string) error {
	for _, e := range entries {
		// kustomize reads an entry as inline configuration first.
		if m, err := v.c.rmf.NewResMapFromBytes([]byte(e)); err == nil {
			if err := v.pluginConfigs(field+" (inline)", m); err != nil {
				return err
			}
			continue
		}
		p, err := v.ref(field, e)
		if err != nil {
			return err
		}
		switch {
		case v.c.b.isDir(p):
			return failure.New(v1alpha2.ReasonUnsupportedFeature,
				"%s: %s entry %q is a directory: plugin configurations built by a kustomization are not "+
					"supported; list their files or inline them", v.file, field, e)
		case v.c.isFile(p):
			v.cost = v.c.add(v.cost, v.c.fileCost(p))
			data, err := v.c.b.read(p)
			if err != nil {
				return err
			}
			// A file kustomize cannot parse fails the build.
			if m, err := v.c.rmf.NewResMapFromBytes(data); err == nil {
				if err := v.pluginConfigs(fmt.Sprintf("%s entry %q", field, e), m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pathKeys are the fields of kustomize's builtin plugin configurations
// that name files to load (PatchTransformer, ReplacementTransformer,
// ValueAddTransformer, the generators, ...), compared without case as
// kustomize does.
var pathKeys = []string{"path", "paths", "targetFilePath", "files", "envs", "env"}

// pluginConfigs checks the builtin plugin configurations of m, found at
// where: builtins only, no Helm, and every file they name is a relative path inside the
// bundle.
func (v *visit) pluginConfigs(where string, m resmap.ResMap) error {
	for _, r := range m.Resources() {
		if gvk := r.GetGvk(); gvk.Group != "" || gvk.Version != konfig.BuiltinPluginApiVersion {
			return failure.New(v1alpha2.ReasonUnsupportedFeature,
				"%s: %s: %s %s: only kustomize's builtin plugins (apiVersion: %s) are supported, "+
					"not exec, Go or function plugins", v.file, where, r.GetApiVersion(), r.GetKind(),
				konfig.BuiltinPluginApiVersion)
		}
		if strings.HasPrefix(r.GetKind(), "HelmChart") {
			return failure.New(v1alpha2.ReasonUnsupportedFeature,
				"%s: %s: %s: inflating Helm charts in a kustomization is not supported; install charts with the Helm class",
				v.file, where, r.GetKind())
		}
		obj, err := r.Map()
		if err != nil {
			// kustomize fails on it too.
			continue
		}
		if err := v.pathValues(fmt.Sprintf("%s: %s %s", where, r.GetKind(), r.GetName()), "", obj); err != nil {
			return err
		}
	}
	return nil
}

// pathValues checks, at any depth of value, the strings under a key of
// pathKeys; key is the key value is under.
func (v *visit) pathValues(where, key string, value any) error {
	switch x := value.(type) {
	case map[string]any:
		for k, sub := range x {
			if err := v.pathValues(where, k, sub); err != nil {
				return err
			}
		}
	case []any:
		for _, sub := range x {
			if err := v.pathValues(where, key, sub); err != nil {
				return err
			}
		}
	case string:
		// A string with a line break is content (an inline patch), and
		// could not be fetched anyway: Go refuses control characters in URLs.
		if !isPathKey(key) || strings.ContainsAny(x, "\r\n") {
			return nil
		}
		_, p, found := strings.Cut(x, "=")
		if !found || isRemote(x) {
			p = x
		}
		if _, err := v.ref(where+": "+key, p); err != nil {
			return err
		}
	}
	return nil
}

// isPathKey reports whether key is one of pathKeys, without case.
func isPathKey(key string) bool {
	for _, k := range pathKeys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}
