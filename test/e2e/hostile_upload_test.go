package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/localcluster"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks on uploads and the content server: a team uploads only through
// the manager (it has no write access to ConfigMaps in rukpak-system), can
// neither change nor plant another team's chunks, GC spares ConfigMaps
// rukpak did not write, and rukpakctl sends no token to a contentURL that
// is not the manager's.

// uploaderRules grant uploading (config/rbac/uploader_role.yaml).
var uploaderRules = []rbacv1.PolicyRule{{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{contentserver.UploadResource}, Verbs: []string{"create"}}}

// allowUploads lets team upload: its installer ServiceAccount may create
// uploads and the team may create tokens for it. It returns a kubeconfig
// acting as the team's user.
func allowUploads(t *testing.T, team *hostileTeam) string {
	t.Helper()
	name := team.ns + "-uploader"
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: uploaderRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team.ns, Name: team.sa}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "installer-token", Namespace: team.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{team.sa}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "installer-token", Namespace: team.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "installer-token"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: team.ns}}},
	)
	kc, err := clientcmd.LoadFromFile(suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = team.user, []string{team.ns, "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// adminUploader creates a ServiceAccount of namespace default that may
// create uploads and returns "default/NAME", for --token-for.
func adminUploader(t *testing.T) string {
	t.Helper()
	name := envtest.UniqueName("uploader")
	createOwned(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: uploaderRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}}},
	)
	return "default/" + name
}

// runAs runs `rukpakctl run NAME DIR` with kubeconfig kc for a bundle of
// one ConfigMap holding value, installed into team's namespace as its
// ServiceAccount, until the RBAC of allowUploads reaches the authorizer;
// it does not wait for the BundleDeployment to be installed.
func runAs(t *testing.T, team *hostileTeam, kc, name, value string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte(configMapYAML("uploaded", value)), 0o644); err != nil {
		t.Fatal(err)
	}
	cleanupBD(t, name)
	var out string
	envtest.Eventually(t, 20*time.Second, func() error {
		var err error
		out, err = rukpakctl("run", name, dir, "--kubeconfig", kc, "--namespace", team.ns, "--service-account", team.sa, "--wait=false")
		if err != nil {
			return fmt.Errorf("rukpakctl run as %s: %w\n%s", team.user, err, out)
		}
		return nil
	})
	return out
}

// contentBase is the local cluster's content server.
func contentBase(t *testing.T) string {
	t.Helper()
	_, base, err := localcluster.ContentServer(suite.stateDir)
	if err != nil || base == "" {
		t.Fatalf("the local cluster records no content server (%q): %v", base, err)
	}
	return base
}

// uploadToken returns a token for the content server of team's installer,
// requested as the team's user.
func uploadToken(t *testing.T, team *hostileTeam, kc string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The Role allowing the request was just created: the API server's
	// authorizer sees it once its informer has (a Forbidden until then).
	var token string
	envtest.Eventually(t, 30*time.Second, func() error {
		tr, err := cs.CoreV1().ServiceAccounts(team.ns).CreateToken(context.Background(), team.sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{contentserver.Audience}}}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("requesting a token for %s/%s as %s: %w", team.ns, team.sa, team.user, err)
		}
		if err != nil {
			t.Fatalf("requesting a token for %s/%s as %s: %v", team.ns, team.sa, team.user, err)
		}
		token = tr.Status.Token
		return nil
	})
	return token
}

// put uploads data as digest to the content server and returns the status
// and body.
func put(t *testing.T, token, digest string, data []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, contentserver.UploadURL(contentBase(t), digest), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// uploadChunks returns the chunk ConfigMaps of the upload digest.
func uploadChunks(t *testing.T, digest string) []corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	hexDigest, err := upload.ParseDigest(digest)
	if err != nil {
		t.Fatal(err)
	}
	m := &corev1.ConfigMap{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: upload.ManifestName(hexDigest)}, m); err != nil {
		t.Fatalf("getting the manifest of upload %s: %v", digest, err)
	}
	var chunks []corev1.ConfigMap
	for _, line := range strings.Fields(m.Data["chunks"]) {
		if len(line) != 64 {
			continue // the sizes
		}
		cm := corev1.ConfigMap{}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: upload.ChunkName(line)}, &cm); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, cm)
	}
	if len(chunks) == 0 {
		t.Fatalf("upload %s has no chunks", digest)
	}
	return chunks
}

// activeUpload returns the upload digest BundleDeployment name runs.
func activeUpload(t *testing.T, name string) string {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd.Spec.Sources[0].Upload.Digest
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var _ = registerHostile(
	hostileCase{
		name: "upload without write access to ConfigMaps in rukpak-system",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			// Writing chunks directly, as rukpakctl used to, is refused.
			planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha2.SystemNamespace, Name: upload.ChunkName(strings.Repeat("0", 64)),
				Labels: map[string]string{upload.LabelChunk: "true"}}, BinaryData: map[string][]byte{"chunk": []byte("x")}}
			direct := team.client.Create(context.Background(), planted)
			kc := allowUploads(t, team)
			name := envtest.UniqueName("upload")
			out := runAs(t, team, kc, name, "v1")
			return func(t *testing.T) {
				if !apierrors.IsForbidden(direct) {
					t.Fatalf("the team created a ConfigMap in %s: %v", v1alpha2.SystemNamespace, direct)
				}
				errContains(t, direct, `configmaps is forbidden`, team.user, v1alpha2.SystemNamespace)
				if !strings.Contains(out, "uploaded") || !strings.Contains(out, "through http://127.0.0.1:") {
					t.Fatalf("rukpakctl run did not upload through the content server:\n%s", out)
				}
				waitInstalled(t, name)
				if v := configMapValue(t, team.ns, "uploaded"); v != "v1" {
					t.Fatalf("the uploaded ConfigMap holds %q, want v1", v)
				}
				for _, cm := range uploadChunks(t, activeUpload(t, name)) {
					if cm.ManagedFields[0].Manager != upload.FieldManager {
						t.Fatalf("chunk %s was written by %q, want the manager's %q", cm.Name, cm.ManagedFields[0].Manager, upload.FieldManager)
					}
				}
			}
		},
	},
	hostileCase{
		name: "change or replace another team's upload chunks",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			victim := newHostileTeam(t)
			victimBD := envtest.UniqueName("victim")
			runAs(t, victim, allowUploads(t, victim), victimBD, "victim's")
			waitInstalled(t, victimBD)
			digest := activeUpload(t, victimBD)
			before := uploadChunks(t, digest)
			chunk := before[0].DeepCopy()

			relabelled := chunk.DeepCopy()
			relabelled.Labels["hostile"] = "true"
			update := team.client.Update(ctx, relabelled)
			del := team.client.Delete(ctx, chunk.DeepCopy())
			// Through the endpoint: other bytes under the victim's digest
			// (stored already, but not by this team: read and refused), and
			// under a new digest.
			token := uploadToken(t, team, allowUploads(t, team))
			evil := []byte("evil content")
			var sameCode, newCode int
			var sameBody, newBody string
			envtest.Eventually(t, 20*time.Second, func() error {
				sameCode, sameBody = put(t, token, digest, evil)
				if sameCode == http.StatusForbidden {
					return fmt.Errorf("the team may not upload yet")
				}
				return nil
			})
			fresh := sha([]byte("what the team claims"))
			newCode, newBody = put(t, token, fresh, evil)
			return func(t *testing.T) {
				for what, err := range map[string]error{"update": update, "delete": del} {
					if !apierrors.IsForbidden(err) {
						t.Fatalf("%s of the victim's chunk %s: %v, want Forbidden", what, chunk.Name, err)
					}
					errContains(t, err, `configmaps "`+chunk.Name+`" is forbidden`, team.user)
				}
				// The digest alone makes no one an uploader: the bytes are
				// read and checked (issue 24).
				if sameCode != http.StatusUnprocessableEntity || !strings.Contains(sameBody, "upload "+digest+": the archive has digest "+sha(evil)) {
					t.Fatalf("uploading other bytes under the victim's stored digest: %d %q, want 422 naming both digests", sameCode, sameBody)
				}
				if newCode != http.StatusUnprocessableEntity || !strings.Contains(newBody, "upload "+fresh+": the archive has digest "+sha(evil)) {
					t.Fatalf("uploading other bytes under a new digest: %d %q, want 422 naming both digests", newCode, newBody)
				}
				for i, cm := range uploadChunks(t, digest) {
					if cm.UID != before[i].UID || !bytes.Equal(cm.BinaryData["chunk"], before[i].BinaryData["chunk"]) || cm.Labels["hostile"] != "" {
						t.Fatalf("the victim's chunk %s changed", cm.Name)
					}
				}
				if v := configMapValue(t, victim.ns, "uploaded"); v != "victim's" {
					t.Fatalf("the victim's ConfigMap holds %q", v)
				}
			}
		},
	},
	hostileCase{
		name: "ConfigMaps labelled as upload chunks by someone else survive upload GC",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			// Someone (here the admin: the team may not write there) labels
			// ConfigMaps of rukpak-system as chunks and manifests.
			foreignData := []byte("not rukpak's")
			foreignHex := strings.TrimPrefix(sha(foreignData), "sha256:")
			foreign := []*corev1.ConfigMap{
				{ObjectMeta: metav1.ObjectMeta{Name: upload.ChunkName(foreignHex), Labels: map[string]string{upload.LabelChunk: "true"}},
					BinaryData: map[string][]byte{"chunk": foreignData}},
				{ObjectMeta: metav1.ObjectMeta{Name: upload.ManifestName(foreignHex), Labels: map[string]string{upload.LabelManifest: foreignHex[:63]}},
					Data: map[string]string{"format": "rukpak-upload-v1"}},
				{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("values"), Labels: map[string]string{upload.LabelChunk: "true"}},
					Data: map[string]string{"values.yaml": "x: 1"}},
			}
			for _, cm := range foreign {
				cm.Namespace, cm.Immutable = v1alpha2.SystemNamespace, ptr.To(true)
				createOwned(t, cm)
			}
			// The team uploads content no BundleDeployment uses: rukpak
			// wrote it, so GC deletes it (the control).
			token := uploadToken(t, team, allowUploads(t, team))
			unused := []byte("unused upload " + team.ns)
			envtest.Eventually(t, 20*time.Second, func() error {
				if code, body := put(t, token, sha(unused), unused); code != http.StatusOK {
					return fmt.Errorf("%d %s", code, body)
				}
				return nil
			})
			unusedChunks := uploadChunks(t, sha(unused))
			// The GC of the manager, with no grace period, so that the test
			// need not wait ten minutes; the uploads in use are the
			// manager's reading of Bundles and BundleDeployments.
			inUse := map[string]bool{}
			bds, bundles := &v1alpha2.BundleDeploymentList{}, &v1alpha2.BundleList{}
			if err := suite.client.List(ctx, bds); err != nil {
				t.Fatal(err)
			}
			if err := suite.client.List(ctx, bundles); err != nil {
				t.Fatal(err)
			}
			for _, srcs := range append(sourcesOf(bds), bundleSources(bundles)...) {
				for _, s := range srcs {
					if s.Upload != nil {
						inUse[s.Upload.Digest] = true
					}
				}
			}
			gc := upload.NewStore(suite.client, suite.client, v1alpha2.SystemNamespace, upload.WithGracePeriod(0))
			deleted, gcErr := gc.GC(ctx, inUse)
			return func(t *testing.T) {
				if gcErr != nil {
					t.Fatalf("GC: %v", gcErr)
				}
				if deleted < 2 {
					t.Fatalf("GC deleted %d ConfigMaps, want at least the unused upload's manifest and chunk", deleted)
				}
				err := suite.client.Get(ctx, client.ObjectKeyFromObject(&unusedChunks[0]), &corev1.ConfigMap{})
				if !apierrors.IsNotFound(err) {
					t.Fatalf("the unused upload's chunk %s survived GC: %v", unusedChunks[0].Name, err)
				}
				for _, cm := range foreign {
					if err := suite.client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
						t.Fatalf("ConfigMap %s/%s, labelled by someone else, did not survive GC: %v", cm.Namespace, cm.Name, err)
					}
				}
			}
		},
	},
	hostileCase{
		name: "a planted status.contentURL gets no token from rukpakctl content",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			var received []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				received = append(received, r.Header.Get("Authorization"))
				mu.Unlock()
			}))
			t.Cleanup(srv.Close)
			// Whoever may write bundles/status (not the team) points a
			// Bundle at their server. Its class is no one's, so no
			// controller writes its status meanwhile.
			b := &v1alpha2.Bundle{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("planted")},
				Spec: v1alpha2.BundleSpec{ProvisionerClassName: "hostile-unowned", Sources: []v1alpha2.BundleSource{{
					Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: sha([]byte("planted"))}}}},
			}
			createOwned(t, b)
			b.Status.ContentURL = srv.URL + "/bundles/" + b.Name
			if err := suite.client.Status().Update(ctx, b); err != nil {
				t.Fatal(err)
			}
			kc := allowUploads(t, team)
			out, err := rukpakctl("content", b.Name, "--kubeconfig", kc, "--token-for", team.ns+"/"+team.sa, "-o", filepath.Join(t.TempDir(), "out"))
			withToken, errToken := rukpakctl("content", b.Name, "--kubeconfig", kc, "--token", "secret-token", "-o", filepath.Join(t.TempDir(), "out"))
			return func(t *testing.T) {
				for _, r := range []struct {
					out string
					err error
				}{{out, err}, {withToken, errToken}} {
					if r.err == nil || !strings.Contains(r.out, `status.contentURL "`+srv.URL+`/bundles/`+b.Name+`" is not the manager's content server`) ||
						!strings.Contains(r.out, "refusing to send a token") {
						t.Fatalf("rukpakctl content of a planted contentURL: %v, want a refusal naming it:\n%s", r.err, r.out)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if len(received) != 0 {
					t.Fatalf("the planted server received %d request(s), Authorization %q; want none", len(received), received)
				}
			}
		},
	},
)

func sourcesOf(l *v1alpha2.BundleDeploymentList) [][]v1alpha2.BundleSource {
	var out [][]v1alpha2.BundleSource
	for i := range l.Items {
		out = append(out, l.Items[i].Spec.Sources)
	}
	return out
}

func bundleSources(l *v1alpha2.BundleList) [][]v1alpha2.BundleSource {
	var out [][]v1alpha2.BundleSource
	for i := range l.Items {
		out = append(out, l.Items[i].Spec.Sources)
	}
	return out
}
