package permissions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// defaultConcurrency is how many reviews run at once when
// Checker.Concurrency is below 1.
const defaultConcurrency = 8

// Checker checks rules with SubjectAccessReviews, which the caller (the
// manager) must be allowed to create.
type Checker struct {
	// Reviews creates SubjectAccessReviews.
	Reviews authorizationv1client.SubjectAccessReviewInterface
	// Concurrency is how many reviews run in parallel; below 1 means 8.
	Concurrency int
}

// verbKey is one verb on one resource in one namespace: one review.
type verbKey struct {
	resourceKey
	verb string
}

// namedVerbs may be granted per object (RBAC resourceNames): when a review
// without a name is denied, each object's name is asked for.
var namedVerbs = []string{"create", "delete", "get", "patch"}

// Missing returns the rules subject lacks for targets, merged like
// Required; nil when it has them all.
//
// Each (namespace, group, resource, verb) is asked once without a name. If
// that is denied and the verb is create, delete, get or patch, it is asked
// again for every target's name (rules with resourceNames), and a target is
// covered when its own name is allowed. list and watch are only asked
// without a name: in the target's namespace, or cluster-wide for
// cluster-scoped targets. Only status.allowed counts. A review that fails
// (rather than being denied) makes Missing return an error.
func (c *Checker) Missing(ctx context.Context, subject Subject, targets []Target) ([]Rule, error) {
	if c.Reviews == nil {
		return nil, errors.New("checking permissions: no SubjectAccessReview client")
	}
	if subject.User == "" {
		return nil, errors.New("checking permissions: subject has no user name")
	}
	// What to ask: every verb on every resource, with a version and the
	// names of the targets.
	versions := map[resourceKey]string{}
	names := map[resourceKey][]string{}
	for _, t := range targets {
		k := keyOf(t)
		if _, ok := versions[k]; !ok {
			versions[k] = t.Resource.Version
		}
		if t.Name != "" && !slices.Contains(names[k], t.Name) {
			names[k] = append(names[k], t.Name)
		}
	}
	var unnamed []verbKey
	for k := range versions {
		for _, v := range Verbs {
			unnamed = append(unnamed, verbKey{k, v})
		}
	}

	denied, err := c.review(ctx, subject, versions, unnamed, func(verbKey) []string { return []string{""} })
	if err != nil {
		return nil, err
	}
	var perName []verbKey
	missing := map[resourceKey][]string{}
	for _, vk := range denied {
		if slices.Contains(namedVerbs, vk.verb) && len(names[vk.resourceKey]) > 0 {
			perName = append(perName, vk)
			continue
		}
		missing[vk.resourceKey] = append(missing[vk.resourceKey], vk.verb)
	}
	denied, err = c.review(ctx, subject, versions, perName, func(vk verbKey) []string { return names[vk.resourceKey] })
	if err != nil {
		return nil, err
	}
	for _, vk := range denied {
		missing[vk.resourceKey] = append(missing[vk.resourceKey], vk.verb)
	}
	return merge(missing), nil
}

// review asks, concurrently, whether subject may do each verb for every
// name namesOf returns ("" for no name), and returns the verbs denied for
// at least one name.
func (c *Checker) review(ctx context.Context, subject Subject, versions map[resourceKey]string, keys []verbKey, namesOf func(verbKey) []string) ([]verbKey, error) {
	limit := c.Concurrency
	if limit < 1 {
		limit = defaultConcurrency
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	var mu sync.Mutex
	denied := map[verbKey]bool{}
	for _, vk := range keys {
		for _, name := range namesOf(vk) {
			g.Go(func() error {
				ok, err := c.allowed(ctx, subject, vk, versions[vk.resourceKey], name)
				if err != nil {
					return err
				}
				if !ok {
					mu.Lock()
					denied[vk] = true
					mu.Unlock()
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]verbKey, 0, len(denied))
	for vk := range denied {
		out = append(out, vk)
	}
	return out, nil
}

// allowed asks whether subject may do one verb on one resource.
func (c *Checker) allowed(ctx context.Context, subject Subject, vk verbKey, version, name string) (bool, error) {
	ok, err := c.Allowed(ctx, subject, authorizationv1.ResourceAttributes{
		Namespace: vk.namespace, Verb: vk.verb, Group: vk.group, Version: version, Resource: vk.resource, Name: name,
	})
	if err != nil {
		return false, fmt.Errorf("reviewing whether %s may %s: %w", subject, describe(vk, name), err)
	}
	return ok, nil
}

// Allowed asks one SubjectAccessReview: whether subject may do what attrs
// describe. Only status.allowed counts.
func (c *Checker) Allowed(ctx context.Context, subject Subject, attrs authorizationv1.ResourceAttributes) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: subject.User, Groups: subject.Groups, ResourceAttributes: &attrs,
	}}
	got, err := c.Reviews.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return got.Status.Allowed, nil
}

// describe names a verb on a resource for error messages.
func describe(vk verbKey, name string) string {
	what := vk.resource
	if vk.group != "" {
		what += "." + vk.group
	}
	if name != "" {
		what += " " + name
	}
	if vk.namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", vk.verb, what, vk.namespace)
	}
	return fmt.Sprintf("%s %s cluster-wide", vk.verb, what)
}
