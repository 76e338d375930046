package apply

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// establishPoll is how often a CRD's conditions are read while waiting.
const establishPoll = 100 * time.Millisecond

// waitEstablished waits until every CRD among the objects at idx is
// Established. A CRD whose names the API server refused is a terminal
// failure; one that is not Established within EstablishTimeout is not.
func (e *Engine) waitEstablished(ctx context.Context, p *run, idx []int) error {
	for _, i := range idx {
		it := p.items[i]
		if it.id.Group != crdGK.Group || it.id.Kind != crdGK.Kind {
			continue
		}
		var last string
		err := wait.PollUntilContextTimeout(ctx, establishPoll, e.opts.EstablishTimeout, true, func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := e.live().Get(ctx, client.ObjectKey{Name: it.id.Name}, crd); err != nil {
				return false, fmt.Errorf("getting CustomResourceDefinition %s: %w", it.id.Name, err)
			}
			for _, c := range crd.Status.Conditions {
				switch {
				case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
					return false, newError(CodeWriteFailed, "CustomResourceDefinition %s: names not accepted: %s", it.id.Name, c.Message)
				case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
					return true, nil
				case c.Type == apiextensionsv1.Established:
					last = c.Message
				}
			}
			return false, nil
		})
		if err != nil {
			if As(err) != nil {
				return err
			}
			return fmt.Errorf("waiting for CustomResourceDefinition %s to be Established (%s): %w", it.id.Name, last, err)
		}
	}
	return nil
}
