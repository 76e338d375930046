// Package helm implements the Helm chart bundle format (class
// core-rukpak-io-helm): a bundle is a Helm chart, rendered with the Helm
// SDK (v4) and installed by rukpak's own apply engine. The SDK only loads
// and renders: there are no Helm actions, no release Secrets and no Helm
// release history; the revision is rukpak's.
//
// Objects is a pipeline:
//
//  1. Find the chart: Chart.yaml at the root of the tree; else the one
//     top-level directory holding a Chart.yaml (how a chart archive or an
//     OCI chart artifact unpacks: <name>/Chart.yaml); else the one .tgz
//     file at the root (a packaged chart). Anything else is refused,
//     naming what the root holds.
//  2. Load it from the fs.FS, within Limits: a directory is walked in
//     lexical order, honouring its .helmignore (and, as Helm does, skipping
//     dot files in templates/), refusing symlinks and other non-regular
//     files, and handed to Helm's loader as in-memory files; a .tgz, and
//     every packaged subchart in a charts/ directory, is first scanned
//     entry by entry against the limits and then unpacked by Helm's
//     archive loader. The chart must be apiVersion v2 (or v1), not a
//     library chart, and every dependency its Chart.yaml declares must be
//     in charts/: rukpak never downloads dependencies. As with helm
//     install, a subchart's own dependencies are not checked (a subchart
//     packaged without them renders without them).
//  3. Check the chart's kubeVersion constraint against the cluster's
//     version (Config.Capabilities).
//  4. Values: Config.Values (resolved by the caller from
//     spec.config.valuesFrom and spec.config.values) over the chart's
//     defaults, coalesced by Helm: maps merge, lists and scalars are
//     replaced, null deletes a default, a subchart's values live under its
//     name (or alias), global values reach every subchart. Subcharts are
//     enabled or disabled by their conditions and tags first, and
//     import-values are applied, as helm install does.
//  5. Validate the values against values.schema.json of the chart and of
//     each enabled subchart. References ($ref) to other files or URLs are
//     never fetched (rendering reads neither the manager's disk nor the
//     network) and match anything; references within the schema apply.
//  6. Render with Helm's engine as helm template does (missing values
//     render empty): .Release.Name is Config.ReleaseName,
//     .Release.Namespace Config.InstallNamespace, .Release.Service "Helm",
//     and .Release.IsInstall, .IsUpgrade and .Revision come from
//     Config.Release, as helm install and helm upgrade set them (the zero
//     value is an install of revision 1). lookup is answered from
//     Config.Lookups (see below).
//     .Capabilities come from Config.Capabilities (the live cluster), or
//     are Helm's defaults when it is nil (rendering without a cluster); an
//     empty version or API version list there takes Helm's default too.
//     NOTES.txt and partials (_*.tpl) produce no objects.
//  7. Split the output into documents as Helm does, skip empty ones, and
//     decode each into an object (a List into its items).
//
// The objects are returned in this order: the files of crds/ directories
// (of the chart, then of enabled subcharts; not templated), then the
// rendered objects that are not hooks in Helm's install order (by kind,
// then by template path and document), then the hooks rukpak installs.
// Objects keep the namespace they were rendered with; those without one
// are left without, and the apply engine places namespaced ones in the
// install namespace. Two objects with the same group, kind, namespace and
// name are refused, naming both files; only a CRD that crds/ directories
// ship twice, the same both times (one subchart under two aliases), is
// installed once, as helm install does.
//
// Hooks: a hook for pre-install, post-install, pre-upgrade or
// post-upgrade (alone or among other events) is returned with the other
// objects, after them, ordered by helm.sh/hook-weight, then name; the apply
// engine runs it at each of its phases (package apply, ApplyOptions.Hooks), as
// Helm does. Hooks only for test, pre-delete, post-delete, pre-rollback or
// post-rollback, and hooks naming an unknown event (Helm 2's crd-install),
// are skipped, as Helm skips them on install and upgrade.
//
// lookup: templates never read the cluster, and the process rendering
// them has no credentials. With Config.Lookups nil (rendering offline, as
// rukpakctl render does) lookup returns an empty map, as in helm
// template. With a non-nil map, lookup returns the answer the map holds
// for its query (format.LookupQuery.Key), decoded afresh on each call (a
// template may change what it is given): the object, a list as
// {"items": [...]}, or an empty map for what does not exist. A query the
// map lacks returns an empty map and is recorded; a render that recorded
// any returns a *format.LookupsNeeded naming them, in the order they were
// first made, instead of its objects or of the template error an empty
// answer may have caused. Whoever renders answers them (package lookup
// reads them as the install identity) and renders again.
// getHostByName returns "".
//
// Determinism: functions that give a new value on every call
// (randAlphaNum, uuidv4, genCA, genPrivateKey, now, ...) render a
// different object each time the chart is rendered. The format renders
// what it is given; it is the caller that renders a revision once and
// keeps what it rendered.
//
// Failures that are the content's or config's fault are *failure.Error
// values: RenderFailed for template errors (Helm's message names the
// template file and line) and for output that is not YAML or not a
// Kubernetes object (naming the template file and document);
// InvalidConfig for values that break a values.schema.json;
// InvalidContent for everything else about the chart (no chart, several,
// an invalid Chart.yaml, missing dependencies, a kubeVersion the cluster
// does not meet, duplicates, limits). Template execution itself is not
// bounded in time or memory here, only its output is: the manager and
// rukpakctl run this format in a child process with memory and time limits
// (package sandboxed), where a chart that loops, allocates without end or
// recurses through tpl fails with reason ResourceLimit naming the chart
// and the limit.
package helm
