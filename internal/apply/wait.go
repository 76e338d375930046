package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// establishPoll is how soon a CRD's conditions are read again after a
// read that found it not Established yet; each further read waits twice
// as long, up to establishPollMax.
const (
	establishPoll    = 100 * time.Millisecond
	establishPollMax = 1600 * time.Millisecond
)

// nextEstablishPoll is the wait after one of interval: twice as long, at
// most establishPollMax. A CRD is read whole (large ones are megabytes of
// schema, read from etcd), and a loaded API server is slow to Establish
// it: reading it ten times a second only loads it more.
func nextEstablishPoll(interval time.Duration) time.Duration {
	return min(2*interval, establishPollMax)
}

// waitEstablished waits until every CRD among the objects at idx is
// Established, at most Concurrency of them at once (each is read whole;
// a bundle decides how many it has): within EstablishTimeout for them
// all. A CRD whose names the API server refused is a terminal failure, and
// stops the wait; one that is not Established in time is not.
func (e *Engine) waitEstablished(ctx context.Context, p *run, idx []int) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.EstablishTimeout)
	defer cancel()
	var crds []int
	for _, i := range idx {
		if id := p.items[i].id; id.Group == crdGK.Group && id.Kind == crdGK.Kind {
			crds = append(crds, i)
		}
	}
	var mu sync.Mutex
	var errs []error
	var terminal error
	e.each(ctx, crds, func(i int) bool {
		err := e.waitCRD(ctx, p.items[i].id.Name)
		if err == nil {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if As(err) != nil && terminal == nil {
			// Reported alone; the others are not waited for.
			terminal = err
			cancel()
		}
		errs = append(errs, err)
		return terminal == nil
	})
	if terminal != nil {
		return terminal
	}
	return errors.Join(errs...)
}

// waitCRD reads CustomResourceDefinition name until it is Established (or
// its names are refused), or ctx is done.
func (e *Engine) waitCRD(ctx context.Context, name string) error {
	var last string
	for interval := establishPoll; ; interval = nextEstablishPoll(interval) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.live().Get(ctx, client.ObjectKey{Name: name}, crd); err != nil && ctx.Err() == nil {
			return fmt.Errorf("getting CustomResourceDefinition %s: %w", name, err)
		}
		for _, c := range crd.Status.Conditions {
			switch {
			case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
				return newError(CodeWriteFailed, "CustomResourceDefinition %s: names not accepted: %s", name, c.Message)
			case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
				return nil
			case c.Type == apiextensionsv1.Established:
				last = c.Message
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for CustomResourceDefinition %s to be Established (%s): %w", name, last, ctx.Err())
		case <-time.After(interval):
		}
	}
}
