//go:build integration

package servingcert_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/rukpak/rukpak/internal/format/registryv1"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/format"
)

const (
	installNS = "webhooks"
	svcName   = "webhook-operator-controller-manager-service"
	secret    = svcName + "-cert"
)

var gadgetV1 = map[string]string{"apiVersion": "webhook.example.com/v1", "kind": "Gadget"}

// TestAPIServerCallsWebhooks renders the webhook-operator bundle of
// package registryv1, fills in its certificates as the manager does and
// applies it to a real API server, whose Service is routed to a webhook
// server of this test: the API server calls it to validate, mutate and
// convert Gadgets, trusting the certificate rukpak made, and keeps doing
// so, with no failed request, through a forced CA rotation.
func TestAPIServerCallsWebhooks(t *testing.T) {
	ip := hostIP(t)
	bin, err := envtest.BinDir()
	if err != nil {
		t.Skip(err)
	}
	e := &crenvtest.Environment{BinaryAssetsDirectory: bin}
	// Route calls to Services through their endpoints (there is no
	// kube-proxy to reach a ClusterIP): the way the API server reaches
	// webhooks and aggregated APIs of a Service here.
	e.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	cfg, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = discoveryv1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNS}}); err != nil {
		t.Fatal(err)
	}

	srv := startWebhookServer(t, ip)
	routeService(t, c, ip, srv.port)

	// A new CA is trusted for 3s before it signs: time for the API
	// server to load the new caBundles.
	opts := servingcert.Options{CAValidity: time.Hour, ServingValidity: 30 * time.Minute, RenewBefore: 5 * time.Minute, Overlap: 3 * time.Second}
	objs := render(t)
	install(t, c, objs, opts, srv)

	t.Log("installed")
	envtest.Eventually(t, 30*time.Second, func() error {
		return createGadget(ctx, c, "ok", false)
	})
	t.Log("first Gadget created")
	if err := createGadget(ctx, c, "bad", true); err == nil || !strings.Contains(err.Error(), "bad gadgets are refused") {
		t.Fatalf("creating a bad Gadget: %v, want refused by the webhook", err)
	}
	checkConverted(t, ctx, c, "ok")

	// Calls go on through the rotation; none may fail.
	var failed atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := createGadget(ctx, c, "during-"+strconv.Itoa(i), false); err != nil {
				failed.Store(fmt.Errorf("%s: creating Gadget during-%d: %w", time.Now().Format(time.StampMilli), i, err))
				return
			}
			if err := getV2(ctx, c, "ok"); err != nil {
				failed.Store(fmt.Errorf("%s: reading Gadget ok as v2: %w", time.Now().Format(time.StampMilli), err))
				return
			}
		}
	}()

	// Phase 1: the CA is due: a new CA is trusted next to the old one,
	// the serving certificate stays.
	force := opts
	force.RenewBefore = 2 * time.Hour
	before := srv.current()
	res := install(t, c, render(t), force, srv)
	if len(res.Renewed) != 1 || srv.current() != before {
		t.Fatalf("phase 1: renewed %v, serving certificate changed: %v", res.Renewed, srv.current() != before)
	}
	waitCABundles(t, ctx, c, 2)
	t.Logf("%s: phase 1 applied", time.Now().Format(time.StampMilli))
	// Phase 2: once trusted for the overlap, the new CA signs a new
	// serving certificate.
	envtest.Eventually(t, 30*time.Second, func() error {
		if res := install(t, c, render(t), opts, srv); srv.current() == before {
			return fmt.Errorf("serving certificate unchanged (renewed %v)", res.Renewed)
		}
		return nil
	})
	t.Logf("%s: phase 2 applied", time.Now().Format(time.StampMilli))
	// Let calls reach the new certificate.
	envtest.Eventually(t, 30*time.Second, func() error {
		if err, _ := failed.Load().(error); err != nil {
			// The calls stopped: none will reach it.
			t.Fatalf("a call failed during the rotation: %v", err)
		}
		if n := srv.servedNew.Load(); n < 5 {
			return fmt.Errorf("%d calls served with the new certificate", n)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a call failed during the rotation: %v", err)
	}
	// The mutating webhook ignores failures: the server counts refused
	// handshakes too.
	if n := srv.handshakeErrors.Load(); n > 0 {
		t.Fatalf("%d TLS handshakes with the webhook server failed", n)
	}
}

// hostIP returns an IPv4 address of this host that Endpoints accept (not
// loopback).
func hostIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address: Endpoints refuse loopback ones")
	return ""
}

// render converts the webhook-operator bundle.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	fsys := os.DirFS(filepath.Join("..", "format", "registryv1", "testdata", "bundles", "webhook-operator"))
	objs, err := registryv1.New().Objects(context.Background(), fsys, format.Config{InstallNamespace: installNS, ReleaseName: "r"})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// install fills in objs' certificates from the live Secret with o, as the
// manager does, applies them and hands the serving certificate to srv (as
// the kubelet and the operator's certificate watcher would).
func install(t *testing.T, c client.Client, objs []*unstructured.Unstructured, o servingcert.Options, srv *webhookServer) servingcert.Result {
	t.Helper()
	ctx := context.Background()
	live, err := servingcert.Load(ctx, c, installNS, servingcert.Requested(objs, installNS))
	if err != nil {
		t.Fatal(err)
	}
	res, err := servingcert.Fill(objs, installNS, live, time.Now(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			waitEstablished(t, c, obj.GetName())
		}
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: installNS, Name: secret}, s); err != nil {
		t.Fatal(err)
	}
	srv.load(t, s.Data)
	return res
}

func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			if m, _ := cond.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not established", name)
	})
}

// waitCABundles waits until every caBundle holds n CAs.
func waitCABundles(t *testing.T, ctx context.Context, c client.Client, n int) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("admissionregistration.k8s.io/v1")
			list.SetKind(kind + "List")
			if err := c.List(ctx, list); err != nil {
				return err
			}
			for _, o := range list.Items {
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				for _, h := range hooks {
					enc, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
					pemData, _ := base64.StdEncoding.DecodeString(enc)
					certs, err := servingcert.ParseCerts(pemData)
					if err != nil || len(certs) != n {
						return fmt.Errorf("%s %s: %d CAs (%v), want %d", kind, o.GetName(), len(certs), err, n)
					}
				}
			}
		}
		return nil
	})
}

// routeService points the generated Service at this host's ip:port,
// through Endpoints and an EndpointSlice (no endpoints controller runs
// here to overwrite them).
func routeService(t *testing.T, c client.Client, ip string, port int32) {
	t.Helper()
	ctx := context.Background()
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: svcName},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports:     []corev1.EndpointPort{{Name: "443", Port: port}},
		}},
	}
	if err := c.Create(ctx, ep); err != nil {
		t.Fatalf("creating Endpoints: %v", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: installNS, Name: svcName + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("443"), Port: ptr.To(port)}},
	}
	if err := c.Create(ctx, slice); err != nil {
		t.Fatalf("creating EndpointSlice: %v", err)
	}
}

func createGadget(ctx context.Context, c client.Client, name string, bad bool) error {
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gadgetV1["apiVersion"], "kind": gadgetV1["kind"],
		"metadata": map[string]any{"name": name, "namespace": installNS, "labels": map[string]any{"validate": "true"}},
		"spec":     map[string]any{"size": int64(3), "bad": bad},
	}}
	return c.Create(ctx, g)
}

// getV2 reads Gadget name as v2, which the conversion webhook converts.
func getV2(ctx context.Context, c client.Client, name string) error {
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("webhook.example.com/v2")
	g.SetKind("Gadget")
	if err := c.Get(ctx, client.ObjectKey{Namespace: installNS, Name: name}, g); err != nil {
		return err
	}
	if n, _, _ := unstructured.NestedInt64(g.Object, "spec", "replicas"); n != 3 {
		return fmt.Errorf("v2 Gadget %s: spec.replicas = %d, want 3 (converted from spec.size)", name, n)
	}
	return nil
}

func checkConverted(t *testing.T, ctx context.Context, c client.Client, name string) {
	t.Helper()
	if err := getV2(ctx, c, name); err != nil {
		t.Fatal(err)
	}
}

// webhookServer is the operator's webhook server: HTTPS with the
// certificate it is given, validating, mutating and converting Gadgets.
type webhookServer struct {
	port      int32
	cert      atomic.Pointer[tls.Certificate]
	first     atomic.Pointer[tls.Certificate]
	servedNew atomic.Int64
	// renewed is set once the certificate changed: every response then
	// asks the client to close its connection (see startWebhookServer).
	renewed atomic.Bool
	// handshakeErrors counts TLS handshakes that failed.
	handshakeErrors atomic.Int64
}

func (s *webhookServer) current() *tls.Certificate { return s.cert.Load() }

// load makes the server present the serving certificate of Secret data.
func (s *webhookServer) load(t *testing.T, data map[string][]byte) {
	t.Helper()
	if cur := s.cert.Load(); cur != nil && string(cur.Certificate[0]) == string(mustDER(t, data)) {
		return
	}
	kp, err := tls.X509KeyPair(data[servingcert.KeyCert], data[servingcert.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	if !s.first.CompareAndSwap(nil, &kp) {
		// A new certificate: new connections from now on, so that the
		// API server meets it (it reuses connections otherwise).
		s.renewed.Store(true)
	}
	s.cert.Store(&kp)
}

func mustDER(t *testing.T, data map[string][]byte) []byte {
	t.Helper()
	kp, err := tls.X509KeyPair(data[servingcert.KeyCert], data[servingcert.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return kp.Certificate[0]
}

func startWebhookServer(t *testing.T, ip string) *webhookServer {
	t.Helper()
	s := &webhookServer{}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s.port = int32(l.Addr().(*net.TCPAddr).Port)
	mux := http.NewServeMux()
	mux.HandleFunc("/validate-webhook-example-com-v1-gadget", s.admit(func(obj map[string]any) *metav1.Status {
		if bad, _, _ := unstructured.NestedBool(obj, "spec", "bad"); bad {
			return &metav1.Status{Message: "bad gadgets are refused", Code: http.StatusForbidden}
		}
		return nil
	}))
	mux.HandleFunc("/mutate-webhook-example-com-v1-gadget", s.admit(func(map[string]any) *metav1.Status { return nil }))
	mux.HandleFunc("/convert", s.convert)
	// The API server's webhook clients speak HTTP/1.1. Once the
	// certificate changed, each response says Connection: close, so the
	// client's next call opens a connection that meets the new
	// certificate. Closing idle connections from this side instead
	// (http.Server.SetKeepAlivesEnabled(false)) races with a call the
	// client is just sending on one: it fails with EOF or a broken pipe,
	// and a POST is not retried.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.renewed.Load() {
			w.Header().Set("Connection", "close")
		}
		mux.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: handler, TLSConfig: &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			cur := s.cert.Load()
			if cur != s.first.Load() {
				s.servedNew.Add(1)
			}
			return cur, nil
		},
	}, ReadHeaderTimeout: 10 * time.Second}
	hs.ErrorLog = log.New(writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "TLS handshake error") {
			s.handshakeErrors.Add(1)
		}
		t.Logf("webhook server: %s", p)
		return len(p), nil
	}), "", 0)
	go func() { _ = hs.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = hs.Close() })
	return s
}

// writerFunc is an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// admit serves AdmissionReviews, refusing with what check returns.
func (s *webhookServer) admit(check func(map[string]any) *metav1.Status) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		obj := map[string]any{}
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if st := check(obj); st != nil {
			resp.Allowed, resp.Result = false, st
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	}
}

// convert serves ConversionReviews between v1 (spec.size) and v2
// (spec.replicas).
func (s *webhookServer) convert(w http.ResponseWriter, r *http.Request) {
	review := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		obj := map[string]any{}
		_ = json.Unmarshal(raw.Raw, &obj)
		spec, _ := obj["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		switch review.Request.DesiredAPIVersion {
		case "webhook.example.com/v2":
			if v, ok := spec["size"]; ok {
				spec["replicas"] = v
				delete(spec, "size")
			}
		default:
			if v, ok := spec["replicas"]; ok {
				spec["size"] = v
				delete(spec, "replicas")
			}
		}
		obj["spec"] = spec
		obj["apiVersion"] = review.Request.DesiredAPIVersion
		out, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(w).Encode(review)
}
