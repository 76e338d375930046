// Package provisioner composes what one provisioner is made of — the
// ProvisionerClass it serves (by controllerName), the sources it can read and
// the format it turns content into objects with — and answers, for a class
// name, whether this manager serves it.
package provisioner

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format"
)

// Provisioner is one served controllerName and the format its content is in.
type Provisioner struct {
	// ControllerName is the ProvisionerClass controllerName served.
	ControllerName string
	// Format turns unpacked content into objects.
	Format format.Format
}

// Set is the provisioners one manager runs, by controllerName.
type Set map[string]Provisioner

// Serves reports whether controllerName is served.
func (s Set) Serves(controllerName string) bool {
	_, ok := s[controllerName]
	return ok
}

// ForClass returns the provisioner serving the ProvisionerClass className.
// ok is false when the class does not exist or names a controller this
// manager does not run: such objects belong to someone else and are left
// alone.
func (s Set) ForClass(ctx context.Context, r client.Reader, className string) (p Provisioner, ok bool, err error) {
	pc := &v1alpha2.ProvisionerClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: className}, pc); err != nil {
		if apierrors.IsNotFound(err) {
			return Provisioner{}, false, nil
		}
		return Provisioner{}, false, fmt.Errorf("getting ProvisionerClass %q: %w", className, err)
	}
	p, ok = s[pc.Spec.ControllerName]
	return p, ok, nil
}
