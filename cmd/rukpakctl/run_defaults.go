package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/localcluster"
)

// maxNameLength is the longest BundleDeployment name the API server takes
// (so that generated Bundle names stay within 63 characters).
const maxNameLength = 52

// notInName are runs of characters a BundleDeployment name cannot hold.
var notInName = regexp.MustCompile(`[^a-z0-9-]+`)

// nameFromDir returns the BundleDeployment name `rukpakctl run DIR` uses:
// the directory's base name, lower-cased, with every run of other
// characters than letters, digits and '-' made one '-'.
func nameFromDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	name := strings.Trim(notInName.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-")
	if len(name) > maxNameLength {
		name = strings.TrimRight(name[:maxNameLength], "-")
	}
	if name == "" || len(validation.IsDNS1123Label(name)) > 0 {
		return "", fmt.Errorf("no BundleDeployment name follows from directory %s: name it, `rukpakctl run NAME %s`", abs, dir)
	}
	return name, nil
}

// defaultUploader returns whom to request the upload token for when
// neither a token, --token-for nor a ServiceAccount of the
// BundleDeployment says: on the local cluster, the Uploader `rukpakctl
// local up` provides for its admin; anywhere else, an error saying which
// commands give rukpakctl an identity to upload as.
func (o *runOptions) defaultUploader(cfg *rest.Config, name, dir string, exists bool) (*types.NamespacedName, error) {
	if localContentServer(cfg) != "" {
		return &localcluster.Uploader, nil
	}
	u := localcluster.Uploader
	msg := fmt.Sprintf("the content server takes a token for audience %s, never the kubeconfig's credentials, "+
		"and BundleDeployment %s names no ServiceAccount to request one for. As the cluster's admin, create a "+
		"ServiceAccount that may upload (once per cluster; `rukpakctl local up` does this for its cluster):\n"+
		"  kubectl create serviceaccount %s -n %s\n"+
		"  kubectl create clusterrolebinding %s --clusterrole=rukpak-uploader --serviceaccount=%s:%s\n"+
		"and upload as it:\n"+
		"  rukpakctl run %s %s --token-for %s",
		contentserver.Audience, name, u.Name, u.Namespace, u.Name, u.Namespace, u.Name, name, dir, u)
	if !exists {
		msg += fmt.Sprintf("\nor install and upload as a ServiceAccount of namespace %s bound to ClusterRole rukpak-uploader "+
			"(see docs/sources.md):\n"+
			"  rukpakctl run %s %s --service-account SERVICEACCOUNT", o.namespace, name, dir)
	}
	return nil, fmt.Errorf("%s", msg)
}
