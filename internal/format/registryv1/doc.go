// Package registryv1 implements the OLM registry+v1 bundle format: a
// bundle is a tree with a manifests/ directory holding exactly one
// ClusterServiceVersion (CSV) and the objects it ships (CRDs, Services,
// ConfigMaps, ...), and an optional metadata/ directory.
//
// Objects converts a bundle in this order:
//
//  1. Check the config: the install namespace and every
//     spec.config.watchNamespaces entry must be namespace names, listed
//     once. watchNamespaces selects the install mode: empty for
//     AllNamespaces, [installNamespace] for OwnNamespace, one other
//     namespace for SingleNamespace, several for MultiNamespace. The target
//     namespaces are watchNamespaces, sorted ("" for AllNamespaces).
//  2. Read metadata/annotations.yaml if there is one (a bundle without it is
//     accepted, with the default manifests/ directory). Its
//     operators.operatorframework.io.bundle.mediatype.v1, if set, must be
//     registry+v1; operators.operatorframework.io.bundle.manifests.v1, if
//     set, names the manifests directory, which must be inside the bundle
//     and not reached through a symlink. Read metadata/dependencies.yaml if
//     there is one.
//  3. Read the manifests directory exactly as plain+v0 reads manifests/
//     (package plain: same files, limits, checks and messages). plain+v0
//     is shown that directory alone, so nothing else of the bundle is read
//     and a kustomization at the bundle root is not built.
//  4. Split out the one CSV (found by kind, whatever its apiVersion, as
//     OLM finds it) and decode the fields this format uses; a field of the
//     wrong type is invalid content.
//  5. Refuse what is not implemented (UnsupportedFeature), rather than
//     install the operator without it: an install strategy other than
//     "deployment" and dependencies in metadata/dependencies.yaml. Required CRDs and
//     APIs (spec.customresourcedefinitions.required and the like) are not
//     checked: the apply engine reports a kind the cluster does not serve.
//  6. Refuse an install mode the CSV does not support
//     (UnsupportedInstallMode, listing the modes it supports and how to
//     select them). Check webhooks and owned APIs (webhooks.go,
//     apiservices.go): a conversion webhook outside AllNamespaces or for
//     a CRD the bundle does not ship, a rule matching core.rukpak.io or
//     webhook configurations, an API of a reserved group are
//     UnsupportedFeature; unknown Deployments and bad names are
//     InvalidContent.
//  7. Generate the objects of the install strategy:
//     - a ServiceAccount in the install namespace for every
//     serviceAccountName of permissions, clusterPermissions and the
//     deployments' pod templates, except "default" and those the manifests
//     define;
//     - for each clusterPermissions entry a ClusterRole and a
//     ClusterRoleBinding to its ServiceAccount;
//     - for each permissions entry a ClusterRole and ClusterRoleBinding in
//     AllNamespaces mode, otherwise a Role and RoleBinding in each target
//     namespace (the install namespace only if it is a target);
//     - for each deployment a Deployment in the install namespace, labeled
//     with its label field, whose spec is kept as written (no defaults are
//     added, so server-side apply owns only what the bundle sets) except the
//     pod template's annotations: the CSV's annotations, overridden by the
//     template's own, and olm.targetNamespaces, the comma-joined target
//     namespaces ("" for AllNamespaces), and olm.operatorNamespace, the
//     install namespace. A creationTimestamp: null in the
//     template's metadata is dropped.
//     - for webhooks and owned APIs (services.go, webhooks.go,
//     apiservices.go): a Service <deployment>-service, its certificate
//     Secret <service>-cert (no data; marked for package servingcert,
//     which the manager uses to fill it in and inject its CA), the
//     Secret mounted in the Deployment at OLM's two paths, webhook
//     configurations scoped to the target namespaces, spec.conversion
//     on converted CRDs, APIServices and their auth-delegator bindings.
//     Role and binding names are "<csv>-<serviceaccount>-<hash>", at most 63
//     characters, the readable part cut to fit; the hash covers the CSV
//     name, the ServiceAccount, the kind and the rules, so names are stable
//     across runs and unique, and identical grants are made once.
//  8. Return, in apply order: CRDs, ServiceAccounts, ClusterRoles,
//     ClusterRoleBindings, Roles, RoleBindings (manifests of those kinds
//     before generated ones), the other manifests in file order, the
//     generated Services and Secrets, the generated Deployments, then the
//     webhook configurations and APIServices. The CSV itself is not returned: no CSV CRD is
//     expected in the cluster.
//
// Manifests other than the CSV pass through unchanged, namespace included:
// the apply engine places namespaced objects without a namespace in the
// install namespace. A generated Service or certificate Secret replaces a
// manifest of the same name (as OLM replaces it); any other generated
// object that a manifest also defines is invalid content. The pod templates get olm.operatorNamespace (the
// install namespace) as in OLM, but not olm.operatorGroup: there is no
// OperatorGroup. spec.relatedImages and bundle properties
// (metadata/properties.yaml, olm.maxOpenShiftVersion and the like) are
// ignored.
//
// Errors that are the bundle's or the config's fault are terminal
// failure.Errors with reason InvalidContent, UnsupportedFeature,
// UnsupportedInstallMode or InvalidConfig, whose messages name the file or
// the CSV at fault.
package registryv1
