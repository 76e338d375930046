package ha

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/test/internal/managerproc"
)

// statefulChart is a chart that makes state as public charts do: a
// webhook's CA and serving certificate from genCA (a new one on every
// render), a database password kept with lookup-or-randAlphaNum, and a
// ConfigMap that shows what .Release says.
var statefulChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: stateful\nversion: 0.1.0\n",
	"values.yaml": "color: red\n",
}

var statefulTemplates = map[string]string{
	"webhook-cert.yaml": `{{- $ca := genCA "stateful-ca" 365 }}
{{- $cert := genSignedCert "stateful-webhook" nil (list (printf "%s-webhook.%s.svc" .Release.Name .Release.Namespace)) 365 $ca }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-webhook-cert
type: kubernetes.io/tls
data:
  ca.crt: {{ $ca.Cert | b64enc }}
  tls.crt: {{ $cert.Cert | b64enc }}
  tls.key: {{ $cert.Key | b64enc }}
`,
	"db-secret.yaml": `{{- $name := printf "%s-db" .Release.Name }}
{{- $old := lookup "v1" "Secret" .Release.Namespace $name }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
data:
  {{- if $old }}
  password: {{ index $old.data "password" }}
  {{- else }}
  password: {{ randAlphaNum 24 | b64enc }}
  {{- end }}
`,
	"release.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-release
data:
  isInstall: {{ .Release.IsInstall | quote }}
  isUpgrade: {{ .Release.IsUpgrade | quote }}
  revision: {{ .Release.Revision | quote }}
  color: {{ .Values.color | quote }}
`,
}

// chartSource makes immutable ConfigMaps in rukpak-system holding the
// stateful chart and returns the sources naming them.
func chartSource(t *testing.T) []v1alpha2.BundleSource {
	t.Helper()
	var refs []v1alpha2.ConfigMapSource
	for path, files := range map[string]map[string]string{"": statefulChart, "templates": statefulTemplates} {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("chart"), Namespace: v1alpha2.SystemNamespace},
			Immutable:  ptr.To(true),
			Data:       files,
		}
		if err := env.Client.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, v1alpha2.ConfigMapSource{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: path})
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: refs}}
}

// secretState is a Secret as read: its resourceVersion and data.
type secretState struct {
	rv   string
	data map[string][]byte
}

func readSecret(t *testing.T, ns, name string) secretState {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("reading Secret %s/%s: %v", ns, name, err)
	}
	return secretState{rv: s.ResourceVersion, data: s.Data}
}

// unchanged fails the test if the Secret was written since was.
func unchanged(t *testing.T, ns, name string, was secretState, when string) {
	t.Helper()
	if now := readSecret(t, ns, name); now.rv != was.rv {
		t.Errorf("%s: Secret %s was written (resourceVersion %s, was %s)", when, name, now.rv, was.rv)
	}
}

// releaseData waits until the release ConfigMap exists with want's
// entries.
func releaseData(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	envtest.Eventually(t, 60*time.Second, func() error {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return err
		}
		for k, v := range want {
			if cm.Data[k] != v {
				return fmt.Errorf("ConfigMap %s: %s = %q, want %q (all: %v)", name, k, cm.Data[k], v, cm.Data)
			}
		}
		return nil
	})
}

// restoredAfterDelete deletes the release ConfigMap and waits until the
// leader puts it back: proof that it reconciled the BundleDeployment.
func restoredAfterDelete(t *testing.T, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(context.Background(), cm, client.Preconditions{UID: &cm.UID}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		got := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return err
		}
		if got.UID == cm.UID {
			return fmt.Errorf("ConfigMap %s not deleted yet", name)
		}
		return nil
	})
}

// activeRevision waits until the BundleDeployment is installed at a
// revision other than not and returns it.
func activeRevision(t *testing.T, name, not string) string {
	t.Helper()
	var active string
	envtest.Eventually(t, 90*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		if active = bd.Status.ActiveBundle; active == "" || active == not {
			return fmt.Errorf("active revision is %q", active)
		}
		return nil
	})
	return active
}

func setColor(t *testing.T, name, color string) {
	t.Helper()
	update(t, name, func(bd *v1alpha2.BundleDeployment) {
		bd.Spec.Config = &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"color":"` + color + `"}`)}}
	})
}

// TestHelmRenderKeptAcrossTakeover installs a chart that makes state
// (issue 27) with two replicas and checks that each revision is what was
// rendered: drift correction, a tampered certificate, the leader's death
// and a restart rewrite no Secret of the chart; an upgrade keeps the
// password (lookup saw it) and says it is an upgrade; a rollback applies
// the earlier revision's objects as they were rendered.
func TestHelmRenderKeptAcrossTakeover(t *testing.T) {
	ctx := context.Background()
	h := managerproc.New(t, env.Config)
	start := func(name string) *replica {
		port := managerproc.FreePort(t)
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		p := h.Start(name, "--leader-elect", "--content-bind-address=127.0.0.1:"+strconv.Itoa(port), "--content-url="+base)
		return &replica{name: name, proc: p, content: base}
	}
	rs := []*replica{start("a"), start("b")}
	leader := leading(t, rs)

	name := envtest.UniqueName("stateful")
	ns := name
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm,
			InstallNamespace:     ns,
			Sources:              chartSource(t),
			Config:               &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"color":"red"}`)}},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	first := activeRevision(t, name, "")
	cmName, certName, dbName := name+"-release", name+"-webhook-cert", name+"-db"
	releaseData(t, ns, cmName, map[string]string{"isInstall": "true", "isUpgrade": "false", "revision": "1", "color": "red"})
	cert, db := readSecret(t, ns, certName), readSecret(t, ns, dbName)
	if len(cert.data["ca.crt"]) == 0 || len(db.data["password"]) != 24 {
		t.Fatalf("chart rendered ca.crt of %d bytes and a password of %d", len(cert.data["ca.crt"]), len(db.data["password"]))
	}

	// Drift of another object of the chart is corrected without
	// rendering again: neither Secret is written.
	restoredAfterDelete(t, ns, cmName)
	unchanged(t, ns, certName, cert, "after a ConfigMap of the chart was put back")
	unchanged(t, ns, dbName, db, "after a ConfigMap of the chart was put back")

	// A tampered CA is put back to the installed one.
	tampered := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: certName}, tampered); err != nil {
		t.Fatal(err)
	}
	tampered.Data["ca.crt"] = []byte("tampered")
	if err := env.Client.Update(ctx, tampered); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		if got := readSecret(t, ns, certName); !bytes.Equal(got.data["ca.crt"], cert.data["ca.crt"]) {
			return fmt.Errorf("ca.crt is %.40q, want the installed CA", got.data["ca.crt"])
		}
		return nil
	})
	cert = readSecret(t, ns, certName)
	unchanged(t, ns, dbName, db, "after the CA was put back")

	// The leader dies; the other replica takes over and writes nothing.
	old := holder(ctx)
	leader.proc.Kill()
	envtest.Eventually(t, 3*takeover, func() error {
		if next := holder(ctx); next == "" || next == old {
			return fmt.Errorf("the lease is still %q's", old)
		}
		return nil
	})
	restoredAfterDelete(t, ns, cmName)
	unchanged(t, ns, certName, cert, "after the other replica took over")
	unchanged(t, ns, dbName, db, "after the other replica took over")

	// A restart: the new leader is stopped and a fresh process leads.
	survivor := rs[0]
	if survivor == leader {
		survivor = rs[1]
	}
	survivor.proc.Stop(t)
	rs = []*replica{start("c")}
	leading(t, rs)
	restoredAfterDelete(t, ns, cmName)
	unchanged(t, ns, certName, cert, "after a restart")
	unchanged(t, ns, dbName, db, "after a restart")
	releaseData(t, ns, cmName, map[string]string{"isInstall": "true", "isUpgrade": "false", "revision": "1"})

	// An upgrade (a values change) keeps the password, which lookup
	// found, and says it is an upgrade; genCA makes a new CA, as helm
	// upgrade does.
	setColor(t, name, "blue")
	second := activeRevision(t, name, first)
	releaseData(t, ns, cmName, map[string]string{"isInstall": "false", "isUpgrade": "true", "revision": "2", "color": "blue"})
	if got := readSecret(t, ns, dbName); !bytes.Equal(got.data["password"], db.data["password"]) {
		t.Errorf("the upgrade changed the password: lookup did not see the installed Secret")
	}
	if got := readSecret(t, ns, certName); bytes.Equal(got.data["ca.crt"], cert.data["ca.crt"]) {
		t.Errorf("the upgrade kept the CA: the revision was not rendered again")
	}

	// A rollback applies the first revision's objects as rendered then:
	// its CA, and what its .Release said.
	setColor(t, name, "red")
	if back := activeRevision(t, name, second); back != first {
		t.Fatalf("rolled back to %s, want the first revision %s", back, first)
	}
	releaseData(t, ns, cmName, map[string]string{"isInstall": "true", "isUpgrade": "false", "revision": "1", "color": "red"})
	envtest.Eventually(t, 30*time.Second, func() error {
		if got := readSecret(t, ns, certName); !bytes.Equal(got.data["ca.crt"], cert.data["ca.crt"]) {
			return fmt.Errorf("ca.crt is not the first revision's")
		}
		return nil
	})
	if got := readSecret(t, ns, dbName); !bytes.Equal(got.data["password"], db.data["password"]) {
		t.Errorf("the rollback changed the password")
	}

	// Nothing was rendered again because a kept render was missing.
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
			t.Errorf("warning event %s: %s", e.Reason, e.Message)
		}
	}
	if err := env.Client.Delete(ctx, bd); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
