package manager_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	internal "github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/pkg/format"
	"github.com/rukpak/rukpak/pkg/manager"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

type noObjects struct{}

func (noObjects) Objects(context.Context, fs.FS, format.Config) ([]*unstructured.Unstructured, error) {
	return nil, nil
}

// TestNewRefuses: options New cannot run are refused before anything
// reaches the cluster.
func TestNewRefuses(t *testing.T) {
	app := provisioner.Provisioner{ControllerName: "example.com/app", Format: noObjects{}}
	for _, tc := range []struct {
		name string
		edit func(*manager.Options)
		want string
	}{
		{"no provisioners", func(o *manager.Options) { o.Provisioners = nil }, "no provisioners to run"},
		{"a lease without a name", func(o *manager.Options) { o.LeaderElection = true; o.LeaderElectionID = "" }, "needs a LeaderElectionID"},
		{"no controllerName", func(o *manager.Options) { o.Provisioners[0].ControllerName = "" }, "a controllerName and a format are required"},
		{"no format", func(o *manager.Options) { o.Provisioners[0].Format = nil }, "a controllerName and a format are required"},
		{"a provisioner twice", func(o *manager.Options) { o.Provisioners = append(o.Provisioners, app) }, `"example.com/app" given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := manager.DefaultOptions()
			opts.StorageDir = t.TempDir()
			opts.Provisioners = []provisioner.Provisioner{app}
			tc.edit(&opts)
			_, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestIdentitiesAreTheEngines: the values of Options.DefaultIdentity this
// package declares are those the engine takes.
func TestIdentitiesAreTheEngines(t *testing.T) {
	if manager.IdentityNone != internal.IdentityNone || manager.IdentityManager != internal.IdentityManager {
		t.Errorf("IdentityNone, IdentityManager = %q, %q; the engine's are %q, %q",
			manager.IdentityNone, manager.IdentityManager, internal.IdentityNone, internal.IdentityManager)
	}
}
