package upgrade_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/test/internal/managerproc"
)

// previousRelease is the commit whose manager this tree's must take over
// from without a write: the last main that CI passed before this test
// existed. Move it forward when a release is cut.
const previousRelease = "15d1ea8870e355cb081e09978830924d4aae4c7c"

// managerUser is who both managers are to the API server, so that the
// audit log tells their requests from the test's.
const managerUser = "rukpak-manager"

var (
	env      *envtest.Env
	auditLog string
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "rukpak-upgrade-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditLog = filepath.Join(dir, "audit.log")
	env, err = envtest.StartWith(envtest.Options{AuditLog: auditLog})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestUpgradeFromPreviousRelease: the previous release's manager installs
// a bundle of each format; this tree's manager, started after it has
// stopped, with a new (empty) content store, reconciles every
// BundleDeployment and writes none of what was installed.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "upgrade")
	managerCfg, err := env.AddUser(managerUser, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	h := managerproc.New(t, managerCfg)
	previous := managerproc.BuildAt(t, previousRelease)
	token := metricsToken(t)

	// What a Deployment's pods share across a rollout: the Service's
	// ports. What they do not: the content store (an emptyDir).
	contentPort, metricsPort := managerproc.FreePort(t), managerproc.FreePort(t)
	flags := func(store string) []string {
		return []string{
			"--storage-dir=" + filepath.Join(h.Dir, store),
			"--content-bind-address=127.0.0.1:" + strconv.Itoa(contentPort),
			"--content-url=http://127.0.0.1:" + strconv.Itoa(contentPort),
			"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		}
	}
	// The previous release bounds a render by the clock (this tree counts
	// the render child's CPU time, internal/sandbox): on a loaded machine
	// its render children, at nice 10, could miss a 10 s deadline by the
	// clock with a second of work, and the test would measure the
	// machine's load instead of a takeover.
	old := h.StartBinary(previous, "previous", append(flags("previous-store"), "--render-timeout=10m")...)

	bds := installEveryFormat(t, ns)
	for _, bd := range bds {
		waitSettled(t, bd.Name)
	}
	// What follows an install (events, reports of Bundles, history) may
	// still be on its way when the conditions say Installed: the previous
	// manager is stopped once it has settled, so that what the manager of
	// this tree writes is its own doing, whatever the machine's load.
	envtest.Eventually(t, 60*time.Second, func() error { return quiet(t, 0) })
	before := map[string]string{}
	for _, bd := range bds {
		before[bd.Name] = activeBundle(t, bd.Name)
	}
	old.Stop(t)

	mark := auditSize(t)
	h.Start("current", flags("current-store")...)
	// The new manager has looked at every BundleDeployment once it has
	// finished a reconcile of each, and has settled once it has sent no
	// request for two seconds.
	envtest.Eventually(t, 60*time.Second, func() error {
		if n, err := reconciles(metricsPort, token); err != nil || n < len(bds) {
			return fmt.Errorf("%d reconciles finished (%v), want %d", n, err, len(bds))
		}
		return quiet(t, mark)
	})

	var writes []string
	requests := managerRequests(t, mark)
	t.Logf("the manager of this tree made %d requests taking over %d BundleDeployments", len(requests), len(bds))
	for _, e := range requests {
		if e.writes() && !bookkeeping[e.ObjectRef.Resource] && !keepsRender(e) {
			writes = append(writes, e.String())
		}
	}
	if len(writes) > 0 {
		t.Fatalf("the manager of this tree wrote %d time(s) taking over from %s:\n%s", len(writes), previousRelease[:7], strings.Join(writes, "\n"))
	}
	for _, bd := range bds {
		if got := activeBundle(t, bd.Name); got != before[bd.Name] {
			t.Errorf("%s: active Bundle %s, was %s", bd.Name, got, before[bd.Name])
		}
	}

	// And it manages what it took over: a deleted object comes back.
	victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain-settings"}}
	if err := env.Client.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 15*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(victim), &corev1.ConfigMap{})
	})
}

// bookkeeping are resources a manager writes as it runs, whatever it
// manages: its lease, events, and the reviews that authorize requests.
var bookkeeping = map[string]bool{
	"leases": true, "events": true, "tokenreviews": true,
	"subjectaccessreviews": true, "selfsubjectreviews": true,
}

// keepsRender tells whether e is the one write a Helm revision installed
// by a release that kept no renders costs: its render is kept the first
// time this tree applies it (docs/helm.md, "Each revision is rendered
// once"), in a Secret of rukpak-system, and no object of it is written.
func keepsRender(e auditEvent) bool {
	return e.Verb == "create" && e.ObjectRef.Resource == "secrets" && e.ObjectRef.Namespace == v1alpha2.SystemNamespace &&
		strings.HasPrefix(e.ObjectRef.Name, "render-")
}

// installEveryFormat creates a BundleDeployment of each built-in format
// (plain manifests, a kustomization, a Helm chart, and a CRD with its
// custom resource from the public corpus) and returns them.
func installEveryFormat(t *testing.T, ns string) []*v1alpha2.BundleDeployment {
	t.Helper()
	corpus, err := os.ReadFile(filepath.Join(sourcetree.Root(), "..", "shared", "corpus", "rukpak-plain", "invalid-crds-and-crs", "manifests", "resources.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bundles := []struct {
		name, class string
		files       map[string]string
		values      string
	}{
		{"plain", v1alpha2.ClassPlain, map[string]string{
			"manifests/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain-settings\ndata:\n  level: info\n",
			"manifests/secret.yaml":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: plain-secret\nstringData:\n  token: s3cret\n",
			"manifests/service.yaml":  "apiVersion: v1\nkind: Service\nmetadata:\n  name: plain\nspec:\n  selector: {app: plain}\n  ports:\n  - port: 80\n    targetPort: 8080\n",
			"manifests/rbac.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: plain\n---\n" +
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: plain\nrules:\n- apiGroups: ['']\n  resources: [configmaps]\n  verbs: [get]\n---\n" +
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: plain\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: plain}\nsubjects:\n- kind: ServiceAccount\n  name: plain\n",
		}, ""},
		{"kustomize", v1alpha2.ClassPlain, map[string]string{
			"kustomization.yaml": "namePrefix: kust-\nresources: [service.yaml]\nconfigMapGenerator:\n- name: settings\n  literals: [level=debug]\n",
			"service.yaml":       "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n",
		}, ""},
		{"helm", v1alpha2.ClassHelm, map[string]string{
			"Chart.yaml":  "apiVersion: v2\nname: greeter\nversion: 1.2.3\n",
			"values.yaml": "greeting: hello\nreplicas: 1\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-greeting\n  labels: {app.kubernetes.io/name: {{ .Chart.Name }}}\n" +
				"data:\n  greeting: {{ .Values.greeting | quote }}\n",
			"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-key\ndata:\n  key: {{ \"fixed\" | b64enc }}\n",
		}, `{"greeting":"hi"}`},
		{"corpus-crd", v1alpha2.ClassPlain, map[string]string{"manifests/resources.yaml": string(corpus)}, ""},
	}
	var bds []*v1alpha2.BundleDeployment
	for _, b := range bundles {
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName(b.name)},
			Spec: v1alpha2.BundleDeploymentSpec{
				ProvisionerClassName: b.class,
				InstallNamespace:     ns,
				Sources:              treeSource(t, b.files),
			},
		}
		if b.values != "" {
			bd.Spec.Config = &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(b.values)}}
		}
		if err := env.Client.Create(context.Background(), bd); err != nil {
			t.Fatalf("creating %s: %v", b.name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
		bds = append(bds, bd)
	}
	return bds
}

// treeSource stores files (paths to contents) in immutable ConfigMaps,
// one a directory, and returns the source that puts them back together.
func treeSource(t *testing.T, files map[string]string) []v1alpha2.BundleSource {
	t.Helper()
	byDir := map[string]map[string]string{}
	for p, content := range files {
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if byDir[dir] == nil {
			byDir[dir] = map[string]string{}
		}
		byDir[dir][path.Base(p)] = content
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var refs []v1alpha2.ConfigMapSource
	for _, d := range dirs {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("upgrade-tree"), Namespace: v1alpha2.SystemNamespace},
			Immutable:  ptr.To(true),
			Data:       byDir[d],
		}
		if err := env.Client.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, v1alpha2.ConfigMapSource{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: d})
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: refs}}
}

// waitSettled waits until name is installed and done with what follows an
// install (health), for its current generation.
func waitSettled(t *testing.T, name string) {
	t.Helper()
	envtest.Eventually(t, 60*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		installed := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if installed == nil || installed.Status != metav1.ConditionTrue || installed.ObservedGeneration != bd.Generation {
			return fmt.Errorf("%s: Installed = %+v", name, installed)
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("%s: Progressing = %+v", name, c)
		}
		return nil
	})
}

func activeBundle(t *testing.T, name string) string {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd.Status.ActiveBundle
}

// metricsToken returns a token allowed to read the managers' metrics.
func metricsToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t, "scraper")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("metrics-reader")},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}
	for _, obj := range []client.Object{sa, role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// reconciles scrapes how many BundleDeployment reconciles the manager on
// port has finished.
func reconciles(port int, token string) (int, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The metrics server's certificate is self-signed.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback, a test process
	}}
	req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("parsing metrics: %w", err)
	}
	n := 0.0
	if f := fams["controller_runtime_reconcile_total"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "bundledeployment" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return int(n), nil
}

// auditEvent is what the test reads of an audit event.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	Code struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// writes tells whether the request writes (or would: a dry-run).
func (e auditEvent) writes() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func (e auditEvent) String() string {
	what := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		what += "/" + e.ObjectRef.Subresource
	}
	return fmt.Sprintf("%s %s %s/%s (%s, %d)", e.Verb, what, e.ObjectRef.Namespace, e.ObjectRef.Name, e.RequestURI, e.Code.Code)
}

// auditSize is how far the audit log has been written.
func auditSize(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// quiet returns an error unless the managers send no request (after
// offset in the audit log) for two seconds.
func quiet(t *testing.T, offset int64) error {
	t.Helper()
	events := managerRequests(t, offset)
	time.Sleep(2 * time.Second)
	if after := managerRequests(t, offset); len(after) != len(events) {
		return fmt.Errorf("the manager is still busy (%d -> %d requests)", len(events), len(after))
	}
	return nil
}

// managerRequests returns the managers' finished requests the audit log
// holds from offset on.
func managerRequests(t *testing.T, offset int64) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var events []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line being written
		}
		if e.Stage == "ResponseComplete" && e.User.Username == managerUser {
			events = append(events, e)
		}
	}
	return events
}
