package servingcert

// Markers a format puts on the objects it renders, and Fill acts on.
const (
	// AnnotationServingFor, on a Secret, asks for a serving certificate
	// for the Service it names, in the Secret's namespace: Fill writes the
	// Secret's data (see the Key constants) and type kubernetes.io/tls.
	AnnotationServingFor = "cert.rukpak.io/serving-for"
	// AnnotationInjectCA, on a ValidatingWebhookConfiguration,
	// MutatingWebhookConfiguration, CustomResourceDefinition, APIService
	// or Deployment, names the Secret (of the same render, marked with
	// AnnotationServingFor) whose trusted CAs Fill writes into the
	// object's caBundle fields that point at a Service.
	AnnotationInjectCA = "cert.rukpak.io/inject-ca-from"
	// AnnotationCertHash is the pod template annotation Fill sets on a
	// Deployment marked with AnnotationInjectCA: a hash of the serving
	// certificate its pods mount, so that they restart when it changes
	// (as OLM's olmcahash does for its CA).
	AnnotationCertHash = "cert.rukpak.io/serving-cert-hash"
)

// Keys of a serving certificate Secret's data.
const (
	// KeyCert is the serving certificate (PEM).
	KeyCert = "tls.crt"
	// KeyKey is its private key (PEM).
	KeyKey = "tls.key"
	// KeyCA is the trusted CAs (PEM), newest first: the CA that signs
	// new serving certificates, then older ones still trusted while
	// certificates they signed may be served.
	KeyCA = "ca.crt"
	// KeyCAKey is the private key of the newest CA (PEM).
	KeyCAKey = "ca.key"
	// KeyOLMCA holds the same as KeyCA, under the key OLM uses.
	KeyOLMCA = "olmCAKey"
)
