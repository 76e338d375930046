package shard

import (
	"context"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update,namespace=rukpak-system

// The announcement Lease's timing: renewed every AnnounceEvery, it lasts
// AnnounceFor, so that a shard counts as running through a leader's
// failover (a standby takes over within about 11s by default).
const (
	AnnounceEvery = 10 * time.Second
	AnnounceFor   = 30 * time.Second
)

// Announcer renews the Lease announcing that Shard runs, while its
// manager leads: LeaseName(Shard) in Namespace, labelled
// core.rukpak.io/shard=Shard.
type Announcer struct {
	Leases    coordinationclient.LeasesGetter
	Namespace string
	Shard     string
	// Every and For default to AnnounceEvery and AnnounceFor.
	Every, For time.Duration
}

var (
	_ manager.Runnable               = (*Announcer)(nil)
	_ manager.LeaderElectionRunnable = (*Announcer)(nil)
)

// NeedLeaderElection is true: only the shard's leader announces it.
func (a *Announcer) NeedLeaderElection() bool { return true }

// Start renews the Lease until ctx ends; failures are logged and retried
// at the next tick.
func (a *Announcer) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("shard").WithValues("shard", a.Shard)
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s_%d", host, os.Getpid())
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := a.renew(ctx, holder); err != nil {
			logger.Error(err, "renewing the shard's Lease")
		}
	}, cmpDuration(a.Every, AnnounceEvery))
	return nil
}

// renew creates or renews the Lease, held by holder.
func (a *Announcer) renew(ctx context.Context, holder string) error {
	leases := a.Leases.Leases(a.Namespace)
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(cmpDuration(a.For, AnnounceFor) / time.Second)
	l, err := leases.Get(ctx, LeaseName(a.Shard), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: LeaseName(a.Shard), Namespace: a.Namespace,
				Labels: map[string]string{v1alpha2.LabelShard: a.Shard}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds,
				AcquireTime: &now, RenewTime: &now},
		}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[v1alpha2.LabelShard] = a.Shard
	if ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		l.Spec.HolderIdentity, l.Spec.AcquireTime = &holder, &now
	}
	l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &seconds, &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
