package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/chartrepotest"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks on the approval gate (docs/security.md, "Approving upgrades"):
// the requester, who may write its BundleDeployment but not approve it,
// lowers the policy that holds its revision; and it forges a revision
// whose name collides with one an approver approved.
var _ = registerHostile(
	hostileCase{name: "the requester lowers the approval policy of a held revision", attack: lowerPolicyAttack},
	hostileCase{name: "an approval of revision R is used for a colliding revision M", attack: collidingRevisionAttack},
)

// gateFiles is a plain bundle of the team's: ConfigMap settings holding
// value, and Role reader (verb get on resources) bound to group.
func gateFiles(value, group string, resources ...string) map[string]string {
	files := map[string]string{"manifests/cm.yaml": configMapYAML("settings", value)}
	if len(resources) == 0 {
		return files
	}
	files["manifests/role.yaml"] = fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: reader\nrules:\n- apiGroups: [\"\"]\n  resources: [%s]\n  verbs: [get]\n",
		strings.Join(resources, ", "))
	files["manifests/binding.yaml"] = fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: reader\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: reader\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: Group\n  name: %s\n", group)
	return files
}

// archives serves gate bundles over HTTP on loopback until the test ends,
// each at its own path (the query is ignored), and returns the server's
// URL.
func archives(t *testing.T, bundles map[string][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := bundles[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// pinnedHTTP is an http source of url pinned to data's sha256.
func pinnedHTTP(url string, data []byte) []v1alpha2.BundleSource {
	sum := sha256.Sum256(data)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: url, SHA256: hex.EncodeToString(sum[:])}}}
}

// letInstallRBAC lets the team's installer ServiceAccount manage Roles and
// RoleBindings in its namespace, as an admin grants a team whose bundles
// ship them (what these cases name beyond docs/security.md's installer).
func (team *hostileTeam) letInstallRBAC(t *testing.T) {
	t.Helper()
	createOwned(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "installer-rbac", Namespace: team.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: installerVerbs},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "installer-rbac", Namespace: team.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "installer-rbac"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team.ns, Name: team.sa}}},
	)
}

// approverOf grants a new user the right to approve BundleDeployment name
// (and get and patch it, as rukpakctl approve does) and returns the user.
func approverOf(t *testing.T, name string) string {
	t.Helper()
	user := envtest.UniqueName("approver")
	grantTo(t, user, "", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"},
		ResourceNames: []string{name}, Verbs: []string{"get", "patch", v1alpha2.VerbApprove}})
	waitAllowed(t, user, []string{"system:authenticated"}, authorizationv1.ResourceAttributes{
		Verb: v1alpha2.VerbApprove, Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments", Name: name}, true)
	return user
}

// updateAs changes BundleDeployment name's spec as c, retrying conflicts.
func updateAs(t *testing.T, c client.Client, name string, mutate func(*v1alpha2.BundleDeployment)) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		mutate(bd)
		err := c.Update(context.Background(), bd)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("updating BundleDeployment %s: %v", name, err)
		}
		return err
	})
}

// readerRole returns the resources Role reader in ns grants and the
// groups RoleBinding reader binds it to; nil for what does not exist.
func readerRole(t *testing.T, ns string) (resources, groups []string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "reader"}, role); err == nil {
		for _, r := range role.Rules {
			resources = append(resources, r.Resources...)
		}
	}
	binding := &rbacv1.RoleBinding{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "reader"}, binding); err == nil {
		for _, s := range binding.Subjects {
			groups = append(groups, s.Name)
		}
	}
	return resources, groups
}

// lowerPolicyAttack: a revision that grows power (another team's group
// may read the namespace's ConfigMaps) waits under PowerGrowth; the
// requester patches spec.upgrade.approval to Automatic, then removes
// spec.upgrade. Both are refused at admission; the revision stays held,
// nothing of it is written.
func lowerPolicyAttack(t *testing.T, team *hostileTeam) func(*testing.T) {
	team.letInstallRBAC(t)
	other := team.ns + "-other-team"
	v1, v2 := chartrepotest.TarGz(t, gateFiles("v1", "")), chartrepotest.TarGz(t, gateFiles("v2", other, "configmaps"))
	base := archives(t, map[string][]byte{"/v1.tgz": v1, "/v2.tgz": v2})
	name := envtest.UniqueName("lower")
	bd := team.bd(name, v1alpha2.ClassPlain, pinnedHTTP(base+"/v1.tgz", v1))
	bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}
	team.create(t, bd)
	rev1 := waitInstalled(t, name).Status.ActiveBundle
	updateAs(t, team.client, name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = pinnedHTTP(base+"/v2.tgz", v2) })
	held := waitAwaitingApproval(t, name, rev1).Status.Review

	lower := func(patch string) error {
		return team.client.Patch(context.Background(), &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	errs := []error{lower(`{"spec":{"upgrade":{"approval":"Automatic"}}}`), lower(`{"spec":{"upgrade":null}}`)}
	return func(t *testing.T) {
		for _, err := range errs {
			if !apierrors.IsForbidden(err) {
				t.Fatalf("lowering the policy as the requester = %v, want Forbidden", err)
			}
			errContains(t, err, "rukpak-approval-lowering", "lowering spec.upgrade.approval from PowerGrowth to Automatic is an approval",
				fmt.Sprintf(`user %q may not approve revisions of BundleDeployment %q`, team.user, name))
		}
		now := waitAwaitingApproval(t, name, rev1)
		if now.Spec.Upgrade.Approval() != v1alpha2.ApprovalPowerGrowth || now.Status.ActiveBundle != rev1 ||
			now.Status.Review.Digest != held.Digest || now.Status.Review.Approved {
			t.Fatalf("policy %s, active %s, review %+v: want the revision of %s still held under PowerGrowth", now.Spec.Upgrade.Approval(), now.Status.ActiveBundle, now.Status.Review, held.Digest)
		}
		if resources, groups := readerRole(t, team.ns); resources != nil || groups != nil {
			t.Fatalf("the held revision's RBAC was written: Role reader grants %v to %v", resources, groups)
		}
	}
}

// nameCollision searches indices i and j such that the revision of
// BundleDeployment bd pinned to rURL+i (content r) and the one pinned to
// mURL+j (content m) have the same name: a birthday search over the
// name's 40 bits, a few million sha256 sums. template is a source as
// bd's revisions pin it (status.resolvedSources).
func nameCollision(t *testing.T, bd *v1alpha2.BundleDeployment, template v1alpha2.BundleSource, rURL string, r []byte, mURL string, m []byte) (rSrc, mSrc []v1alpha2.BundleSource) {
	t.Helper()
	const placeholder = "PLACEHOLDER0"
	spec := func(url string, data []byte) []v1alpha2.BundleSource {
		src := *template.DeepCopy()
		src.HTTP.URL = url
		src.HTTP.SHA256 = pinnedHTTP(url, data)[0].HTTP.SHA256
		return []v1alpha2.BundleSource{src}
	}
	// The JSON ownership.SpecDigest hashes, with the index left open.
	encode := func(url string, data []byte) (head, tail []byte) {
		b, err := json.Marshal(struct {
			Class   string                  `json:"class"`
			Sources []v1alpha2.BundleSource `json:"sources"`
			Config  *v1alpha2.BundleConfig  `json:"config,omitempty"`
		}{bd.Spec.ProvisionerClassName, spec(url+placeholder, data), bd.Spec.Config})
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte(placeholder))
		return b[:i], b[i+len(placeholder):]
	}
	short := func(head, tail []byte, i int) uint64 {
		h := sha256.New()
		h.Write(head)
		h.Write(strconv.AppendInt(nil, int64(i), 10))
		h.Write(tail)
		var sum [8]byte
		copy(sum[3:], h.Sum(nil)[:5])
		return binary.BigEndian.Uint64(sum[:])
	}
	const stored = 1 << 20
	rHead, rTail := encode(rURL, r)
	seen := make(map[uint64]int32, stored)
	for i := range stored {
		seen[short(rHead, rTail, i)] = int32(i)
	}
	mHead, mTail := encode(mURL, m)
	for j := range 1 << 24 {
		i, ok := seen[short(mHead, mTail, j)]
		if !ok {
			continue
		}
		rSrc, mSrc = spec(rURL+strconv.Itoa(int(i)), r), spec(mURL+strconv.Itoa(j), m)
		name := func(srcs []v1alpha2.BundleSource) string {
			return ownership.RevisionName(bd.Name, v1alpha2.BundleSpec{ProvisionerClassName: bd.Spec.ProvisionerClassName, Sources: srcs, Config: bd.Spec.Config}, "")
		}
		if name(rSrc) != name(mSrc) {
			t.Fatalf("the search found %s and %s, whose revision names %s and %s differ: it does not hash what ownership.SpecDigest does", rSrc[0].HTTP.URL, mSrc[0].HTTP.URL, name(rSrc), name(mSrc))
		}
		return rSrc, mSrc
	}
	t.Fatal("no collision of revision names found")
	return nil, nil
}

// collidingRevisionAttack: the requester finds two pinned sources whose
// revisions share a name — R, which lets the team's own group read
// ConfigMaps, and M, which lets another team's group read ConfigMaps and
// Services. An approver approves R under PowerGrowth; a revision that
// grows nothing follows and the history limit (0) drops R's Bundle; the
// requester then switches to M, under R's name, with R's approval still
// in the annotations. M must wait for an approval of its own.
func collidingRevisionAttack(t *testing.T, team *hostileTeam) func(*testing.T) {
	team.letInstallRBAC(t)
	other := team.ns + "-other-team"
	v0 := chartrepotest.TarGz(t, gateFiles("v0", ""))
	r := chartrepotest.TarGz(t, gateFiles("r", team.ns, "configmaps"))
	next := chartrepotest.TarGz(t, gateFiles("t", team.ns, "configmaps"))
	m := chartrepotest.TarGz(t, gateFiles("m", other, "configmaps", "services"))
	base := archives(t, map[string][]byte{"/v0.tgz": v0, "/r.tgz": r, "/t.tgz": next, "/m.tgz": m})
	name := envtest.UniqueName("collide")
	bd := team.bd(name, v1alpha2.ClassPlain, pinnedHTTP(base+"/v0.tgz", v0))
	bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}
	bd.Spec.RevisionHistoryLimit = ptr.To[int32](0)
	team.create(t, bd)
	bd = waitInstalled(t, name)
	rev0 := bd.Status.ActiveBundle
	if got := ownership.RevisionName(name, v1alpha2.BundleSpec{ProvisionerClassName: bd.Spec.ProvisionerClassName, Sources: bd.Status.ResolvedSources, Config: bd.Spec.Config}, ""); got != rev0 {
		t.Fatalf("revision %s is not named %s as ownership.RevisionName names it: the collision search would hash something else", rev0, got)
	}
	began := time.Now()
	rSrc, mSrc := nameCollision(t, bd, bd.Status.ResolvedSources[0], base+"/r.tgz?n=", r, base+"/m.tgz?n=", m)
	t.Logf("revision name collision found in %v: %s and %s", time.Since(began).Round(time.Millisecond), rSrc[0].HTTP.URL, mSrc[0].HTTP.URL)

	// R waits, is approved with rukpakctl approve, and is installed.
	updateAs(t, team.client, name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = rSrc })
	held := waitAwaitingApproval(t, name, rev0).Status.Review
	revR, digestR := held.Revision, held.Digest
	if out, err := rukpakctl("approve", name, "--revision", digestR, "--kubeconfig", kubeconfigAs(t, approverOf(t, name))); err != nil {
		t.Fatalf("rukpakctl approve: %v\n%s", err, out)
	}
	if active := waitActive(t, name, rev0).Status.ActiveBundle; active != revR {
		t.Fatalf("active %s after approving R, want %s", active, revR)
	}
	// A revision that grows nothing; R's Bundle is dropped.
	updateAs(t, team.client, name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = pinnedHTTP(base+"/t.tgz", next) })
	revT := waitActive(t, name, revR).Status.ActiveBundle
	envtest.Eventually(t, 30*time.Second, func() error {
		err := suite.client.Get(context.Background(), client.ObjectKey{Name: revR}, &v1alpha2.Bundle{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("Bundle %s of R still there (%v)", revR, err)
		}
		return nil
	})

	// M, under R's name, with R's approval in the annotations.
	updateAs(t, team.client, name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = mSrc })
	return func(t *testing.T) {
		bd := waitAwaitingApproval(t, name, revT)
		rev := bd.Status.Review
		if rev.Revision != revR || rev.Digest == digestR || rev.Digest == "" {
			t.Fatalf("status.review = %s (%s): want M under R's name %s with a digest of its own, not %s", rev.Revision, rev.Digest, revR, digestR)
		}
		if got := bd.Annotations[v1alpha2.AnnotationApproveRevision]; got != digestR {
			t.Fatalf("%s = %q, want R's approval %s", v1alpha2.AnnotationApproveRevision, got, digestR)
		}
		if resources, groups := readerRole(t, team.ns); slices.Contains(resources, "services") || slices.Contains(groups, other) || bd.Status.ActiveBundle != revT {
			t.Fatalf("M was applied on R's approval: active %s, Role reader grants %v to %v", bd.Status.ActiveBundle, resources, groups)
		}
	}
}
