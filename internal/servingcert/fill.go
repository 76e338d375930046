package servingcert

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// MaxPerRevision bounds the certificate Secrets one revision may ask for.
// The annotation that asks is bundle content (any format may carry it),
// and each request costs the manager a read of a Secret and, when due, key
// generation and signing in its own process: without a bound, a bundle of
// many marked Secrets would make a render that much work.
const MaxPerRevision = 64

// Result is what Fill did.
type Result struct {
	// Renewed names the Secrets whose data differs from the live ones
	// (new, or a certificate replaced).
	Renewed []string
	// Next is when Fill would decide something else for the same live
	// Secrets (zero when no object is marked).
	Next time.Time
}

// Live is the data of the live Secrets of one namespace, by name; a
// missing entry is a Secret that does not exist.
type Live map[string]map[string][]byte

// Requested returns the names of the Secrets of objs marked with
// AnnotationServingFor in namespace (objects without a namespace are in
// it).
func Requested(objs []*unstructured.Unstructured, namespace string) []string {
	var names []string
	for _, o := range objs {
		if isCertSecret(o, namespace) {
			names = append(names, o.GetName())
		}
	}
	return names
}

// Load reads the Secrets names of namespace with r, for Fill.
func Load(ctx context.Context, r client.Reader, namespace string, names []string) (Live, error) {
	if len(names) > MaxPerRevision {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%d Secrets ask for serving certificates (%s), more than the limit of %d per revision",
			len(names), AnnotationServingFor, MaxPerRevision)
	}
	live := Live{}
	for _, name := range names {
		s := &corev1.Secret{}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading certificate Secret %s/%s: %w", namespace, name, err)
		default:
			live[name] = s.Data
		}
	}
	return live, nil
}

// Fill completes the marked objects of objs in place, at t: each Secret
// marked with AnnotationServingFor gets the data Renew keeps from its live
// data, and each object marked with AnnotationInjectCA gets that Secret's
// trusted CAs as caBundle (a Deployment gets the hash of its serving
// certificate as a pod template annotation instead). A mark naming a Secret the objects do not
// request, or on an object of another kind, is an error.
func Fill(objs []*unstructured.Unstructured, namespace string, live Live, t time.Time, o Options) (Result, error) {
	var res Result
	secrets := map[string]map[string][]byte{}
	for _, obj := range objs {
		if !isCertSecret(obj, namespace) {
			continue
		}
		svc := obj.GetAnnotations()[AnnotationServingFor]
		hosts := Hosts(svc, namespace)
		st, err := Renew(live[obj.GetName()], hosts, svc+"."+namespace+"-ca", t, o)
		if err != nil {
			return Result{}, fmt.Errorf("certificate for Service %s/%s: %w", namespace, svc, err)
		}
		if st.Changed {
			res.Renewed = append(res.Renewed, obj.GetName())
		}
		if res.Next.IsZero() || st.Next.Before(res.Next) {
			res.Next = st.Next
		}
		setSecretData(obj, st.Data)
		secrets[obj.GetName()] = st.Data
	}
	for _, obj := range objs {
		from, ok := obj.GetAnnotations()[AnnotationInjectCA]
		if !ok {
			continue
		}
		data, ok := secrets[from]
		if !ok {
			return Result{}, fmt.Errorf("%s %s: annotation %s names Secret %q, which is not a certificate Secret of the bundle (annotated %s)",
				obj.GetKind(), obj.GetName(), AnnotationInjectCA, from, AnnotationServingFor)
		}
		if err := inject(obj, data); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// Hosts are the DNS names of Service svc of namespace that a serving
// certificate is issued for.
func Hosts(svc, namespace string) []string {
	return []string{svc, svc + "." + namespace, svc + "." + namespace + ".svc", svc + "." + namespace + ".svc.cluster.local"}
}

// isCertSecret reports whether o is a Secret of namespace marked with
// AnnotationServingFor.
func isCertSecret(o *unstructured.Unstructured, namespace string) bool {
	if o.GetAPIVersion() != "v1" || o.GetKind() != "Secret" {
		return false
	}
	if ns := o.GetNamespace(); ns != "" && ns != namespace {
		return false
	}
	_, ok := o.GetAnnotations()[AnnotationServingFor]
	return ok
}

// setSecretData sets obj's data and type.
func setSecretData(obj *unstructured.Unstructured, data map[string][]byte) {
	enc := make(map[string]any, len(data))
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString(v)
	}
	obj.Object["data"] = enc
	obj.Object["type"] = string(corev1.SecretTypeTLS)
	delete(obj.Object, "stringData")
}
