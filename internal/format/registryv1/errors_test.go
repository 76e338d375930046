package registryv1

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

func TestObjectsRefusals(t *testing.T) {
	const ann = "metadata/annotations.yaml"
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		watch      []string
		wantReason string
		want       []string
	}{
		{
			name:       "no CSV",
			fsys:       bundleFS(map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"bundle has no ClusterServiceVersion", "manifests/"},
		},
		{
			name: "two CSVs",
			fsys: bundleFS(map[string]string{
				"manifests/a.yaml": testCSV{name: "a.v1"}.yaml(),
				"manifests/b.yaml": testCSV{name: "b.v1"}.yaml(),
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"2 ClusterServiceVersions", "a.v1, b.v1", "exactly one"},
		},
		{
			name: "wrong mediatype",
			fsys: bundleFS(map[string]string{
				"manifests/csv.yaml": testCSV{}.yaml(),
				ann:                  "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: plain+v0\n",
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{ann, `"plain+v0"`, `not "registry+v1"`},
		},
		{
			name: "manifests directory outside the bundle",
			fsys: bundleFS(map[string]string{
				"manifests/csv.yaml": testCSV{}.yaml(),
				ann:                  "annotations:\n  operators.operatorframework.io.bundle.manifests.v1: ../elsewhere/\n",
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{ann, `"../elsewhere/"`, "not a directory inside the bundle"},
		},
		{
			name: "manifests directory missing",
			fsys: bundleFS(map[string]string{
				"manifests/csv.yaml": testCSV{}.yaml(),
				ann:                  "annotations:\n  operators.operatorframework.io.bundle.manifests.v1: deploy/\n",
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"bundle has no deploy/ directory"},
		},
		{
			name: "invalid manifest in a custom manifests directory",
			fsys: bundleFS(map[string]string{
				"deploy/csv.yaml": testCSV{}.yaml(),
				"deploy/bad.yaml": "a: [\n",
				ann:               "annotations:\n  operators.operatorframework.io.bundle.manifests.v1: deploy/\n",
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"deploy/bad.yaml: document 1 (line 1): invalid YAML"},
		},
		{
			name:       "annotations of the wrong type",
			fsys:       bundleFS(map[string]string{"manifests/csv.yaml": testCSV{}.yaml(), ann: "annotations: [a, b]\n"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{ann, "annotations is a JSON array, want an object"},
		},
		{
			name:       "invalid annotations YAML",
			fsys:       bundleFS(map[string]string{"manifests/csv.yaml": testCSV{}.yaml(), ann: "annotations: {\n"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{ann},
		},
		{
			name:       "deployments not a list",
			fsys:       csvBundle(testCSV{deployments: "{name: op}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"ClusterServiceVersion my-op.v1.2.0", "spec.install.spec.deployments is a JSON object, want a list"},
		},
		{
			name:       "deployment spec field of the wrong type",
			fsys:       csvBundle(testCSV{deployments: "[{name: op, spec: {replicas: two}}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "spec.install.spec.deployments[0].spec.replicas is a JSON string, want an integer"},
		},
		{
			name:       "deployment without spec",
			fsys:       csvBundle(testCSV{deployments: "[{name: op}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "spec.install.spec.deployments[0].spec is missing"},
		},
		{
			name:       "deployment with an invalid name",
			fsys:       csvBundle(testCSV{deployments: "[{name: Op_1, spec: {}}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", `spec.install.spec.deployments[0].name "Op_1"`},
		},
		{
			name:       "deployment listed twice",
			fsys:       csvBundle(testCSV{deployments: "[{name: op, spec: {}}, {name: op, spec: {}}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "deployments[1]: Deployment op is listed twice"},
		},
		{
			name:       "permission without a ServiceAccount",
			fsys:       csvBundle(testCSV{install: "permissions: [{rules: []}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", `spec.install.spec.permissions[0].serviceAccountName ""`},
		},
		{
			name:       "rules of the wrong type",
			fsys:       csvBundle(testCSV{install: "clusterPermissions: [{serviceAccountName: sa, rules: [{verbs: get}]}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "spec.install.spec.clusterPermissions[0].rules.verbs is a JSON string, want a list"},
		},
		{
			name:       "annotation that is not a string",
			fsys:       csvBundle(testCSV{metadata: "annotations: {replicas: 3}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "metadata.annotations", "want a string"},
		},
		{
			name:       "invalid CSV name",
			fsys:       csvBundle(testCSV{name: "My_Operator"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"ClusterServiceVersion My_Operator: metadata.name is not a valid object name"},
		},
		{
			name:       "no install strategy",
			fsys:       csvBundle(testCSV{strategy: `""`}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "spec.install.strategy is missing"},
		},
		{
			name:       "other install strategy",
			fsys:       csvBundle(testCSV{strategy: "helm"}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"ClusterServiceVersion my-op.v1.2.0", `install strategy "helm"`, `only "deployment"`},
		},
		{
			name:       "webhook of an unknown Deployment",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: ValidatingAdmissionWebhook, generateName: vop.example.com, deploymentName: other, admissionReviewVersions: [v1], sideEffects: None}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"ClusterServiceVersion my-op.v1.2.0", `webhook vop.example.com (ValidatingAdmissionWebhook) names deploymentName "other"`},
		},
		{
			name:       "webhook of an unknown type",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: AuditWebhook, generateName: vop.example.com, deploymentName: op}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"webhook vop.example.com (AuditWebhook): type must be"},
		},
		{
			name:       "webhook name not fully qualified",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: MutatingAdmissionWebhook, generateName: vop, deploymentName: op}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"webhook vop (MutatingAdmissionWebhook): generateName must be a fully qualified domain name"},
		},
		{
			name:       "webhook intercepting rukpak",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: ValidatingAdmissionWebhook, generateName: vop.example.com, deploymentName: op, rules: [{apiGroups: [core.rukpak.io], apiVersions: ['*'], operations: ['*'], resources: [bundledeployments]}]}"}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"webhook vop.example.com (ValidatingAdmissionWebhook): rules[0] matches bundledeployments.core.rukpak.io"},
		},
		{
			name:       "webhook intercepting everything",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: MutatingAdmissionWebhook, generateName: mop.example.com, deploymentName: op, rules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*/*']}]}"}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"rules[0] matches every resource of API group"},
		},
		{
			name:       "webhook intercepting webhook configurations",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: ValidatingAdmissionWebhook, generateName: vop.example.com, deploymentName: op, rules: [{apiGroups: [admissionregistration.k8s.io], apiVersions: [v1], operations: [CREATE], resources: [validatingwebhookconfigurations]}]}"}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"rules[0] matches validatingwebhookconfigurations.admissionregistration.k8s.io"},
		},
		{
			name:       "conversion webhook outside AllNamespaces",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: ConversionWebhook, generateName: cop.example.com, deploymentName: op, conversionCRDs: [widgets.example.com]}"}),
			watch:      []string{"ns"},
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"webhook cop.example.com (ConversionWebhook): a conversion webhook", "only supported in AllNamespaces mode"},
		},
		{
			name:       "conversion webhook for a CRD not in the bundle",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: ConversionWebhook, generateName: cop.example.com, deploymentName: op, conversionCRDs: [widgets.example.com]}"}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"conversionCRDs names CRD widgets.example.com, which the bundle does not own"},
		},
		{
			name:       "webhook field of the wrong type",
			fsys:       csvBundle(testCSV{spec: "webhookdefinitions:\n- {type: ValidatingAdmissionWebhook, generateName: vop.example.com, deploymentName: op, rules: text}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"spec.webhookdefinitions.rules is a JSON string, want a list"},
		},
		{
			name:       "owned API service of a reserved group",
			fsys:       csvBundle(testCSV{spec: "apiservicedefinitions: {owned: [{name: pods, group: metrics.k8s.io, version: v1beta1, kind: PodMetrics, deploymentName: op}]}"}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want:       []string{"spec.apiservicedefinitions.owned[0]: API group metrics.k8s.io is reserved"},
		},
		{
			name:       "owned API service of an unknown Deployment",
			fsys:       csvBundle(testCSV{spec: "apiservicedefinitions: {owned: [{name: metrics, group: metrics.example.com, version: v1}]}"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{`owned APIService v1.metrics.example.com names deploymentName ""`},
		},
		{
			name: "dependencies",
			fsys: bundleFS(map[string]string{
				"manifests/csv.yaml":         testCSV{}.yaml(),
				"metadata/dependencies.yaml": "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=0.9.0'}\n",
			}),
			wantReason: v1alpha2.ReasonUnsupportedFeature,
			want: []string{"ClusterServiceVersion my-op.v1.2.0", "metadata/dependencies.yaml",
				`olm.package {"packageName":"etcd","version":"\u003e=0.9.0"}`},
		},
		{
			name: "malformed dependencies",
			fsys: bundleFS(map[string]string{
				"manifests/csv.yaml":         testCSV{}.yaml(),
				"metadata/dependencies.yaml": "dependencies: olm.package\n",
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"metadata/dependencies.yaml", "dependencies is a JSON string, want a list"},
		},
		{
			name:       "unsupported install mode lists the supported ones",
			fsys:       csvBundle(testCSV{modes: "[{type: OwnNamespace, supported: true}, {type: SingleNamespace, supported: true}, {type: AllNamespaces, supported: false}]"}),
			wantReason: v1alpha2.ReasonUnsupportedInstallMode,
			want: []string{"ClusterServiceVersion my-op.v1.2.0 does not support AllNamespaces; it supports OwnNamespace, SingleNamespace: " +
				"set spec.config.watchNamespaces to [ns] for OwnNamespace, or one other namespace for SingleNamespace"},
		},
		{
			name:       "MultiNamespace unsupported",
			fsys:       csvBundle(testCSV{}),
			watch:      []string{"a", "b"},
			wantReason: v1alpha2.ReasonUnsupportedInstallMode,
			want:       []string{"my-op.v1.2.0 does not support MultiNamespace; it supports AllNamespaces, OwnNamespace", "nothing (empty) for AllNamespaces"},
		},
		{
			name:       "no install mode supported",
			fsys:       csvBundle(testCSV{modes: "[{type: AllNamespaces, supported: false}]"}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"my-op.v1.2.0", "spec.installModes supports no install mode"},
		},
		{
			name:       "invalid watch namespace",
			fsys:       csvBundle(testCSV{}),
			watch:      []string{"Team_A"},
			wantReason: v1alpha2.ReasonInvalidConfig,
			want:       []string{`spec.config.watchNamespaces[0] "Team_A" is not a valid namespace name`},
		},
		{
			name:       "watch namespace listed twice",
			fsys:       csvBundle(testCSV{}),
			watch:      []string{"a", "a"},
			wantReason: v1alpha2.ReasonInvalidConfig,
			want:       []string{`lists namespace "a" twice`},
		},
		{
			name: "generated Deployment also in the manifests",
			fsys: bundleFS(map[string]string{
				"manifests/csv.yaml":    testCSV{}.yaml(),
				"manifests/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\n",
			}),
			wantReason: v1alpha2.ReasonInvalidContent,
			want:       []string{"object Deployment.apps/op (namespace ns) is defined twice: in manifests/ and by ClusterServiceVersion my-op.v1.2.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := convert(tt.fsys, tt.watch...)
			if err == nil {
				t.Fatal("Objects() succeeded, want an error")
			}
			if got := failure.Reason(err, "not a failure"); got != tt.wantReason {
				t.Errorf("reason = %q, want %q (error: %v)", got, tt.wantReason, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestObjectsInvalidInstallNamespace(t *testing.T) {
	_, err := New().Objects(t.Context(), csvBundle(testCSV{}), format.Config{ReleaseName: "release"})
	if got := failure.Reason(err, ""); got != v1alpha2.ReasonInvalidConfig {
		t.Fatalf("reason = %q, want InvalidConfig (error: %v)", got, err)
	}
}
