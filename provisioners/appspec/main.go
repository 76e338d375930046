// Command appspec-provisioner runs the appspec provisioner (package
// appspec) with the rukpak engine of package
// github.com/rukpak/rukpak/pkg/manager: it serves the ProvisionerClass
// "appspec" (controllerName appspec.example.com/app), next to rukpak's own
// manager, which leaves its BundleDeployments alone. It takes the same
// flags as rukpak's manager, so `rukpakctl local up --provisioner PATH`
// can run it.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/manager"
	"github.com/rukpak/rukpak/pkg/provisioner"

	"example.com/rukpak-appspec/appspec"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "appspec-provisioner:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := manager.DefaultOptions()
	opts.StorageDir = "/var/cache/appspec"
	manager.BindFlags(flag.CommandLine, &opts)
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	opts.Provisioners = []provisioner.Provisioner{appspec.Provisioner()}
	opts.Classes = []v1alpha2.ProvisionerClass{appspec.Class()}
	opts.LeaderElectionID = "appspec-provisioner"
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
