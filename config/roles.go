package config

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed rbac/uploader_role.yaml
var userRolesYAML []byte

// UserRoles decodes the ClusterRoles the release manifest ships for users
// rather than for the manager (config/rbac/uploader_role.yaml):
// rukpak-uploader, rukpak-content-reader and rukpak-metrics-reader, in
// that order. The local cluster installs them as the release does.
func UserRoles() ([]*rbacv1.ClusterRole, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(userRolesYAML)))
	var roles []*rbacv1.ClusterRole
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return roles, nil
		}
		if err != nil {
			return nil, fmt.Errorf("splitting rbac/uploader_role.yaml: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(doc, role); err != nil {
			return nil, fmt.Errorf("decoding rbac/uploader_role.yaml (document %d): %w", i, err)
		}
		if role.Kind != "ClusterRole" || role.Name == "" {
			return nil, fmt.Errorf("rbac/uploader_role.yaml (document %d) is not a named ClusterRole", i)
		}
		roles = append(roles, role)
	}
}
