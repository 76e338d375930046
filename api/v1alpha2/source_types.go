package v1alpha2

// SourceType names the kind of a BundleSource. Exactly the member of the
// BundleSource that matches the type is set.
// +kubebuilder:validation:Enum=image;git;http;helmRepository;catalog;configMaps;upload
type SourceType string

// The source types.
const (
	// SourceTypeImage reads content from an OCI image.
	SourceTypeImage SourceType = "image"
	// SourceTypeGit reads content from a git repository.
	SourceTypeGit SourceType = "git"
	// SourceTypeHTTP reads content from a .tar.gz archive served over HTTP(S).
	SourceTypeHTTP SourceType = "http"
	// SourceTypeHelmRepository reads a chart from a Helm chart repository
	// (an index.yaml served over HTTP(S)), at a version or the newest of a
	// range.
	SourceTypeHelmRepository SourceType = "helmRepository"
	// SourceTypeCatalog reads the registry+v1 bundle of a package that an
	// operator catalog (a File-Based Catalog image) selects.
	SourceTypeCatalog SourceType = "catalog"
	// SourceTypeConfigMaps reads content from immutable ConfigMaps in the
	// system namespace.
	SourceTypeConfigMaps SourceType = "configMaps"
	// SourceTypeUpload reads content uploaded with `rukpakctl run`.
	SourceTypeUpload SourceType = "upload"
)

// BundleSource is one place content is read from. Several sources may make up
// one bundle, each placed at its destination in the unpacked tree.
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'image') == has(self.image)",message="source of type image must set exactly the image member"
// +kubebuilder:validation:XValidation:rule="(self.type == 'git') == has(self.git)",message="source of type git must set exactly the git member"
// +kubebuilder:validation:XValidation:rule="(self.type == 'http') == has(self.http)",message="source of type http must set exactly the http member"
// +kubebuilder:validation:XValidation:rule="(self.type == 'helmRepository') == has(self.helmRepository)",message="source of type helmRepository must set exactly the helmRepository member"
// +kubebuilder:validation:XValidation:rule="(self.type == 'catalog') == has(self.catalog)",message="source of type catalog must set exactly the catalog member"
// +kubebuilder:validation:XValidation:rule="(self.type == 'configMaps') == has(self.configMaps)",message="source of type configMaps must set exactly the configMaps member"
// +kubebuilder:validation:XValidation:rule="(self.type == 'upload') == has(self.upload)",message="source of type upload must set exactly the upload member"
type BundleSource struct {
	// type is the kind of source; exactly the member of the same name is set.
	// +required
	Type SourceType `json:"type"`

	// image reads content from an OCI image.
	// +optional
	Image *ImageSource `json:"image,omitempty"`

	// git reads content from a git repository.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// http reads content from a .tar.gz archive.
	// +optional
	HTTP *HTTPSource `json:"http,omitempty"`

	// helmRepository reads a chart from a Helm chart repository.
	// +optional
	HelmRepository *HelmRepositorySource `json:"helmRepository,omitempty"`

	// catalog reads the bundle of a package an operator catalog selects.
	// +optional
	Catalog *CatalogSource `json:"catalog,omitempty"`

	// configMaps reads content from immutable ConfigMaps in the system
	// namespace (rukpak-system); each ConfigMap's keys become files.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ConfigMaps []ConfigMapSource `json:"configMaps,omitempty"`

	// upload reads content uploaded with `rukpakctl run`.
	// +optional
	Upload *UploadSource `json:"upload,omitempty"`

	// destination is the sub-path of the unpacked tree this source is placed
	// at; empty means the root. It must be relative and must not contain "..".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="destination must be a relative path without '..'"
	Destination string `json:"destination,omitempty"`
}

// LocalObjectReference names an object in the system namespace (rukpak-system).
type LocalObjectReference struct {
	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// namespace of the object: empty or rukpak-system. rukpak reads the
	// Secrets and ConfigMaps that sources name only from its own namespace,
	// so that a BundleDeployment cannot make it read another namespace's
	// Secrets; any other value is refused.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == 'rukpak-system'",message="sources read Secrets and ConfigMaps only from rukpak-system; copy the object there"
	Namespace string `json:"namespace,omitempty"`
}

// ImageSource reads content from an OCI image: the one ref names, or the
// newest tag of the repository ref names that is a version in versions.
//
// +kubebuilder:validation:XValidation:rule="!has(self.versions) || (!self.ref.contains('@') && !self.ref.matches(':[^/]*$'))",message="with versions, ref names the repository only, without a tag or digest"
// +kubebuilder:validation:XValidation:rule="!has(self.resolvedTag) || (has(self.versions) && has(self.digest))",message="resolvedTag is set only with versions and digest"
type ImageSource struct {
	// ref is the image reference, by tag or (preferably) by digest. An
	// "oci://" prefix, as Helm writes chart references, is allowed. With
	// versions set, ref is the repository alone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Ref string `json:"ref"`

	// pullSecret names a kubernetes.io/dockerconfigjson Secret in rukpak-system.
	// +optional
	PullSecret *LocalObjectReference `json:"pullSecret,omitempty"`

	// insecureSkipTLSVerify turns off TLS verification of the registry.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// caSecret names a Secret in rukpak-system whose ca.crt key holds the CA
	// bundle the registry's certificate is verified against.
	// +optional
	CASecret *LocalObjectReference `json:"caSecret,omitempty"`

	// platform selects the image of a multi-platform index, as os/arch[/variant];
	// the default is the manager's platform.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Platform string `json:"platform,omitempty"`

	// versions is a semantic-version constraint over the tags of the
	// repository ref names, read as Helm reads a chart version: an exact
	// version ("1.2.3") or a range ("1.x", "~1.2.0", ">=1.2 <2"). The
	// newest tag in it is taken; a pre-release only when the constraint
	// names one (">=1.3.0-0"). Tags are versions with an optional leading "v";
	// others ("latest", "1.2") are never taken. The tags are listed again
	// every pollInterval, and a newer tag in range is a new revision.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Versions string `json:"versions,omitempty"`

	// digest pins the image ("sha256:<hex>", the digest of the manifest or
	// index ref names). rukpak sets it on resolved sources; a user may set it
	// to pin a tag ref. A ref by digest is pinned already.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	Digest string `json:"digest,omitempty"`

	// resolvedTag is the tag versions selected, whose image digest pins.
	// rukpak sets it on resolved sources.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ResolvedTag string `json:"resolvedTag,omitempty"`

	// verify requires the image to be signed: an image whose signature
	// does not verify is refused (SignatureInvalid) before anything of it
	// is unpacked.
	// +optional
	Verify *ImageVerification `json:"verify,omitempty"`
}

// GitSource reads content from a git repository.
type GitSource struct {
	// repository is the clone URL (https://… or ssh://…).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Repository string `json:"repository"`

	// ref selects what to check out.
	// +required
	Ref GitRef `json:"ref"`

	// directory is the sub-directory of the repository to read; empty means
	// the root.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Directory string `json:"directory,omitempty"`

	// auth names the credentials for the repository.
	// +optional
	Auth *GitAuth `json:"auth,omitempty"`

	// insecureSkipTLSVerify turns off TLS verification of the server.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// caSecret names a Secret in rukpak-system whose ca.crt key holds the CA
	// bundle the server's certificate is verified against.
	// +optional
	CASecret *LocalObjectReference `json:"caSecret,omitempty"`

	// resolvedCommit is the commit ref resolved to. rukpak sets it on
	// resolved sources; with it set the source is pinned.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}([0-9a-f]{24})?$`
	ResolvedCommit string `json:"resolvedCommit,omitempty"`

	// resolvedTag is the tag ref.semver selected, whose commit
	// resolvedCommit is. rukpak sets it on resolved sources.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ResolvedTag string `json:"resolvedTag,omitempty"`
}

// GitRef selects a commit. Exactly one field is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.commit), has(self.tag), has(self.branch), has(self.semver)].filter(x, x).size() == 1",message="exactly one of commit, tag, branch and semver must be set"
type GitRef struct {
	// commit is a full commit hash; it is fetched once.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}([0-9a-f]{24})?$`
	Commit string `json:"commit,omitempty"`

	// tag is re-resolved every pollInterval.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Tag string `json:"tag,omitempty"`

	// branch is re-resolved every pollInterval.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Branch string `json:"branch,omitempty"`

	// semver is a semantic-version constraint over the repository's tags,
	// read as Helm reads a chart version: an exact version ("1.2.3") or a
	// range ("1.x", "~1.2.0", ">=1.2 <2"). The newest tag in it is taken;
	// a pre-release only when the constraint names one (">=1.3.0-0").
	// Tags are versions with an optional leading "v"; others ("latest",
	// "1.2") are never taken. The tags are listed again every
	// pollInterval, and a newer tag in range is a new revision.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Semver string `json:"semver,omitempty"`
}

// GitAuth names the credentials for a git repository.
type GitAuth struct {
	// secret names a Secret in rukpak-system: username and password (or
	// token) for HTTPS; ssh-privatekey and known_hosts for SSH.
	// +required
	Secret LocalObjectReference `json:"secret"`
}

// HTTPSource reads content from a .tar.gz archive served over HTTP(S).
type HTTPSource struct {
	// url of the archive.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="url must be http:// or https://"
	URL string `json:"url"`

	// sha256 is the hex digest the archive must have; with it set, the
	// archive is fetched once and a mismatch fails the revision. Without it
	// the URL is re-fetched every pollInterval and rukpak sets it on
	// resolved sources.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256,omitempty"`

	// auth names the credentials for the server.
	// +optional
	Auth *HTTPAuth `json:"auth,omitempty"`

	// insecureSkipTLSVerify turns off TLS verification of the server.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// caSecret names a Secret in rukpak-system whose ca.crt key holds the CA
	// bundle the server's certificate is verified against.
	// +optional
	CASecret *LocalObjectReference `json:"caSecret,omitempty"`
}

// HelmRepositorySource names a chart of a Helm chart repository and the
// versions of it to install: an exact version, or a range whose newest
// version is installed and followed (see docs/sources.md). The repository
// is an HTTP(S) one (an index.yaml) or an OCI registry repository of
// charts (oci://), as Helm reads both.
// +kubebuilder:validation:XValidation:rule="has(self.resolvedVersion) == has(self.resolvedURL) && has(self.resolvedURL) == has(self.sha256)",message="resolvedVersion, resolvedURL and sha256 are set together"
// +kubebuilder:validation:XValidation:rule="!has(self.pullSecret) || self.url.startsWith('oci://')",message="pullSecret is for oci:// repositories; an http(s) repository takes auth"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.pullSecret)",message="auth and pullSecret are two ways to give an oci:// repository's credentials: set one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.verify.cosign) || self.url.startsWith('oci://')",message="verify.cosign is for oci:// repositories"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.verify.provenance) || !self.url.startsWith('oci://')",message="verify.provenance is for http(s) repositories"
type HelmRepositorySource struct {
	// url of the repository: an http(s):// repository, whose index is
	// url/index.yaml, or an oci:// registry repository of charts
	// ("oci://ghcr.io/org/charts"), where the chart is the repository
	// url/chart and its versions are its tags ("+" written "_", as helm
	// push writes them).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://') || self.startsWith('oci://')",message="url must be http://, https:// or oci://"
	URL string `json:"url"`

	// chart is the chart's name in the repository's index.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Chart string `json:"chart"`

	// version is an exact version ("4.11.2") or a range as Helm reads one
	// ("4.x", "~4.11.0", ">=1.2 <2"); a range matches a pre-release only
	// when it names one. Empty means the newest version that is not a
	// pre-release. A range is resolved again every pollInterval, and a
	// newer version in it is a new revision.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// resolvedVersion is the version the index gave for version. rukpak
	// sets it, with resolvedURL and sha256, on resolved sources; a user
	// who sets all three pins the chart to that archive.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ResolvedVersion string `json:"resolvedVersion,omitempty"`

	// resolvedURL is where the archive of resolvedVersion is; for an
	// oci:// repository, the chart's tag (oci://host/path/chart:tag).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://') || self.startsWith('oci://')",message="resolvedURL must be http://, https:// or oci://"
	ResolvedURL string `json:"resolvedURL,omitempty"`

	// sha256 is the hex digest the archive of resolvedVersion must have;
	// for an oci:// repository, the digest of the chart's manifest, which
	// is what is pulled (never the tag).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256,omitempty"`

	// auth names the credentials for the repository: a Secret in
	// rukpak-system with username and password, or a token. For an
	// http(s) repository they are sent to the repository's host only (a
	// chart archive the index places on another host is downloaded
	// without them, as Helm does by default), the token as a bearer token.
	// For an oci:// repository they are the registry's, as `helm registry
	// login --username --password` gives them: username and password
	// authenticate to the registry (or its token service), a token is a
	// registry token sent as a bearer token. auth and pullSecret are not
	// set together.
	// +optional
	Auth *HTTPAuth `json:"auth,omitempty"`

	// insecureSkipTLSVerify turns off TLS verification of the repository
	// and its archives.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// caSecret names a Secret in rukpak-system whose ca.crt key holds the CA
	// bundle the repository's certificate is verified against.
	// +optional
	CASecret *LocalObjectReference `json:"caSecret,omitempty"`

	// pullSecret names a kubernetes.io/dockerconfigjson Secret in
	// rukpak-system for an oci:// repository, read as an image source
	// reads its pullSecret; auth is the other way to give the registry's
	// credentials.
	// +optional
	PullSecret *LocalObjectReference `json:"pullSecret,omitempty"`

	// verify requires the chart to be signed: a chart whose signature does
	// not verify is refused (SignatureInvalid) before anything of it is
	// unpacked.
	// +optional
	Verify *HelmRepositoryVerification `json:"verify,omitempty"`
}

// HelmRepositoryVerification says how a chart of a Helm repository must be
// signed: with cosign (oci:// repositories) or a Helm provenance file
// (http(s) repositories). Exactly one is set.
// +kubebuilder:validation:XValidation:rule="has(self.cosign) != has(self.provenance)",message="verify must set exactly one of cosign and provenance"
type HelmRepositoryVerification struct {
	// cosign, for an oci:// repository, checks a cosign signature of the
	// chart's manifest, exactly as an image source's verify.cosign does.
	// +optional
	Cosign *CosignVerification `json:"cosign,omitempty"`

	// provenance, for an http(s) repository, checks the chart's
	// provenance file (the archive's URL with ".prov" appended, as
	// `helm package --sign` writes it) as `helm install --verify` does: it
	// must be signed by a key of the keyring and name the sha256 of the
	// archive, which must be the pinned one.
	// +optional
	Provenance *ProvenanceVerification `json:"provenance,omitempty"`
}

// ProvenanceVerification names the keys a Helm provenance file must be
// signed with.
type ProvenanceVerification struct {
	// keyringSecret names a Secret in rukpak-system whose key keyring
	// holds the OpenPGP public keys: a GnuPG keyring (pubring.gpg), a
	// keybox (pubring.kbx) or armored keys (gpg --export --armor).
	// +required
	KeyringSecret LocalObjectReference `json:"keyringSecret"`
}

// UpgradeEdges is how a catalog source may move from the installed bundle.
// +kubebuilder:validation:Enum=CatalogProvided;SelfCertified
type UpgradeEdges string

// The upgrade edge policies.
const (
	// UpgradeEdgesCatalogProvided follows the catalog's edges: from the
	// installed bundle, only to a bundle that replaces it, skips it or
	// whose skipRange includes its version.
	UpgradeEdgesCatalogProvided UpgradeEdges = "CatalogProvided"
	// UpgradeEdgesSelfCertified allows any bundle in the channels and
	// version range, an upgrade or a downgrade, whatever the edges.
	UpgradeEdgesSelfCertified UpgradeEdges = "SelfCertified"
)

// CatalogSource names a package of an operator catalog (a File-Based
// Catalog image) and the bundles of it to install: the newest bundle of
// its channels and version range that the upgrade edge policy allows (see
// docs/sources.md). The bundle must be registry+v1 and declare no
// dependencies.
// +kubebuilder:validation:XValidation:rule="has(self.resolvedBundle) == has(self.resolvedVersion) && has(self.resolvedVersion) == has(self.resolvedImage) && has(self.resolvedImage) == has(self.catalogDigest)",message="resolvedBundle, resolvedVersion, resolvedImage and catalogDigest are set together"
type CatalogSource struct {
	// image is the catalog image's reference; its File-Based Catalog is
	// under the directory its label
	// operators.operatorframework.io.index.configs.v1 names (/configs
	// when it has none).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// package is the name of the package to install.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Package string `json:"package"`

	// channels limits the bundles to those of these channels of the
	// package; empty means any channel.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Channels []string `json:"channels,omitempty"`

	// version is a range of versions ("1.2.x", ">=1.2 <2", "~1.4.0") or an
	// exact version; a range matches a pre-release only when it names one.
	// Empty means any version. The catalog is resolved again every
	// pollInterval, and a newer bundle it selects is a new revision.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// upgradeEdges is how the source may move from the installed bundle:
	// CatalogProvided (the default) only along the catalog's replaces,
	// skips and skipRange edges; SelfCertified to any bundle of the
	// channels and range.
	// +optional
	// +kubebuilder:default=CatalogProvided
	UpgradeEdges UpgradeEdges `json:"upgradeEdges,omitempty"`

	// pullSecret names a kubernetes.io/dockerconfigjson Secret in
	// rukpak-system, used for the catalog image and the bundle images.
	// +optional
	PullSecret *LocalObjectReference `json:"pullSecret,omitempty"`

	// insecureSkipTLSVerify turns off TLS verification of the registries
	// of the catalog image and the bundle images, and allows plain HTTP.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// caSecret names a Secret in rukpak-system whose ca.crt key holds the
	// CA bundle the registries' certificates are verified against.
	// +optional
	CASecret *LocalObjectReference `json:"caSecret,omitempty"`

	// resolvedBundle is the name of the bundle the catalog selected.
	// rukpak sets it, with resolvedVersion, resolvedImage and
	// catalogDigest, on resolved sources; a user who sets all four pins
	// the source to that bundle image.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ResolvedBundle string `json:"resolvedBundle,omitempty"`

	// resolvedVersion is the version of resolvedBundle.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ResolvedVersion string `json:"resolvedVersion,omitempty"`

	// resolvedImage is the bundle image of resolvedBundle, by digest
	// (repository@sha256:...).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('@sha256:[0-9a-f]{64}$')",message="resolvedImage must name its image by sha256 digest"
	ResolvedImage string `json:"resolvedImage,omitempty"`

	// catalogDigest is the digest of the catalog image the bundle was
	// selected from.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	CatalogDigest string `json:"catalogDigest,omitempty"`
}

// HTTPAuth names the credentials for an HTTP server.
type HTTPAuth struct {
	// secret names a Secret in rukpak-system with username and password, or
	// a bearer token under the key token.
	// +required
	Secret LocalObjectReference `json:"secret"`
}

// ConfigMapSource places the keys of one immutable ConfigMap as files.
type ConfigMapSource struct {
	// configMap names an immutable ConfigMap in rukpak-system.
	// +required
	ConfigMap LocalObjectReference `json:"configMap"`

	// path is the directory of the unpacked tree the keys land in.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="path must be a relative path without '..'"
	Path string `json:"path,omitempty"`

	// digest pins the ConfigMap's content ("sha256:<hex>" over its keys and
	// values). rukpak sets it on resolved sources; a user may set it to
	// refuse any other content.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	Digest string `json:"digest,omitempty"`
}

// UploadSource reads content uploaded with `rukpakctl run`.
type UploadSource struct {
	// digest is the content digest ("sha256:<hex>") of the uploaded archive.
	// +required
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	Digest string `json:"digest"`
}

// ImageVerification says how an image's signature is checked.
type ImageVerification struct {
	// cosign checks a cosign signature stored next to the image (the tag
	// sha256-<digest>.sig of its repository), made with a public key or
	// keyless.
	// +required
	Cosign *CosignVerification `json:"cosign"`
}

// CosignVerification says which cosign signatures an image must carry:
// one made with a public key (publicKeySecret) or a keyless one, made
// with a short-lived certificate for an identity (keyless). Exactly one of
// the two is set.
// +kubebuilder:validation:XValidation:rule="has(self.publicKeySecret) != has(self.keyless)",message="cosign must set exactly one of publicKeySecret and keyless"
type CosignVerification struct {
	// publicKeySecret names a Secret in rukpak-system whose key cosign.pub
	// holds the PEM public key the image must be signed with.
	// +optional
	PublicKeySecret *LocalObjectReference `json:"publicKeySecret,omitempty"`

	// keyless requires a keyless signature: a certificate issued by a
	// certificate authority of the trusted root to the given identity,
	// and an entry of a transparency log of the trusted root showing the
	// signature was made while the certificate was valid.
	// +optional
	Keyless *KeylessVerification `json:"keyless,omitempty"`
}

// KeylessVerification is what a keyless cosign signature must chain to
// and whom its certificate must name. Everything is checked offline,
// against the trusted root only.
// +kubebuilder:validation:XValidation:rule="has(self.subject) != has(self.subjectRegExp)",message="keyless must set exactly one of subject and subjectRegExp"
type KeylessVerification struct {
	// trustedRootConfigMap names a ConfigMap in rukpak-system whose key
	// trusted_root.json holds a sigstore trusted root (the JSON of
	// `cosign trusted-root create`, or the trusted_root.json of a
	// sigstore TUF repository): the certificate authorities signing
	// certificates and the transparency logs' keys.
	// +required
	TrustedRootConfigMap LocalObjectReference `json:"trustedRootConfigMap"`

	// issuer is the OIDC issuer the certificate must name (its extension
	// 1.3.6.1.4.1.57264.1.8, or the older 1.3.6.1.4.1.57264.1.1), exactly,
	// such as https://token.actions.githubusercontent.com.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Issuer string `json:"issuer"`

	// subject is the identity the certificate must name in its subject
	// alternative name, exactly: an email address or a URI (such as a
	// GitHub workflow's
	// https://github.com/ORG/REPO/.github/workflows/release.yaml@refs/heads/main).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Subject string `json:"subject,omitempty"`

	// subjectRegExp is a regular expression (RE2 syntax) the whole
	// identity must match; it is anchored at both ends.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
}
