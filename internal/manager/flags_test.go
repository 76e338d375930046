package manager_test

import (
	"flag"
	"reflect"
	"testing"

	"github.com/rukpak/rukpak/internal/manager"
)

// setInCode are the options no flag sets: a binary sets them in code.
var setInCode = map[string]bool{
	"Provisioners": true, "Classes": true, "LeaderElectionID": true,
	"ApprovalTTL": true, "SkipControllerNameValidation": true,
}

// TestFlagsSetEveryOption: every flag of BindFlags sets its option, and
// every option but those set in code has a flag, so that cmd/rukpak and
// the provisioners of pkg/manager (BindEngineFlags) take the same ones.
func TestFlagsSetEveryOption(t *testing.T) {
	args := map[string]string{
		"storage-dir":                    "/store",
		"max-concurrent-reconciles":      "3",
		"tenant-reconciles":              "3",
		"hook-waits":                     "3",
		"tenant-hook-waits":              "3",
		"apply-concurrency":              "3",
		"health-probe-bind-address":      ":1",
		"metrics-bind-address":           ":2",
		"metrics-insecure":               "true",
		"metrics-cert-dir":               "/certs",
		"pprof-bind-address":             ":3",
		"content-bind-address":           ":4",
		"content-url":                    "https://content",
		"content-tls-cert-file":          "/tls.crt",
		"content-tls-key-file":           "/tls.key",
		"default-identity":               "manager",
		"require-approval":               "false",
		"require-separate-approver":      "true",
		"leader-elect":                   "true",
		"leader-election-namespace":      "elsewhere",
		"leader-election-lease-duration": "3s",
		"leader-election-renew-deadline": "2s",
		"leader-election-retry-period":   "3ms",
		"source-timeout":                 "3s",
		"source-concurrency":             "3",
		"tenant-source-concurrency":      "3",
		"tenant-renders":                 "7",
		"store-quota":                    "3Mi",
		"tenant-store-quota":             "1Mi",
		"shard":                          "a",
		"serve-v1alpha1":                 "false",
		"crd-webhook-bind-address":       ":5",
		"crd-webhook-service":            "webhook",
		"render-memory":                  "3Mi",
		"render-timeout":                 "3s",
		"render-concurrency":             "3",
		"tenant-render-concurrency":      "3",
	}
	opts := manager.DefaultOptions()
	fs := flag.NewFlagSet("rukpak", flag.ContinueOnError)
	manager.BindFlags(fs, &opts)
	var argv []string
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := args[f.Name]
		if !ok {
			t.Errorf("--%s is not in this test's table", f.Name)
		}
		argv = append(argv, "--"+f.Name+"="+v)
	})
	if len(argv) != len(args) {
		t.Errorf("BindFlags registers %d flags, the table has %d", len(argv), len(args))
	}
	if err := fs.Parse(argv); err != nil {
		t.Fatal(err)
	}
	def := manager.DefaultOptions()
	unchanged(t, reflect.ValueOf(opts.EngineOptions), reflect.ValueOf(def.EngineOptions))
	unchanged(t, reflect.ValueOf(opts), reflect.ValueOf(def))
}

// unchanged reports the fields of got, a struct, that are as in def and
// not set in code.
func unchanged(t *testing.T, got, def reflect.Value) {
	t.Helper()
	for i := range got.NumField() {
		f := got.Type().Field(i)
		if f.Anonymous || setInCode[f.Name] {
			continue
		}
		if reflect.DeepEqual(got.Field(i).Interface(), def.Field(i).Interface()) {
			t.Errorf("no flag sets %s.%s", got.Type().Name(), f.Name)
		}
	}
}
