package shard

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// LeasePrefix starts the name of each shard's announcement Lease.
const LeasePrefix = "rukpak-shard-"

// Validate reports whether name can name a shard: a DNS-1123 label (it
// is a label value and part of Lease names). "" (unsharded) is valid.
func Validate(name string) error {
	if name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("shard %q: %s", name, errs[0])
	}
	return nil
}

// LeaderElectionID is the leader-election lease of shard's managers: base
// for the unsharded one, base-shard-NAME for a shard's.
func LeaderElectionID(base, shard string) string {
	if shard == "" {
		return base
	}
	return base + "-shard-" + shard
}

// LeaseName is the Lease through which shard's leader announces that it
// runs.
func LeaseName(shard string) string { return LeasePrefix + shard }

// UserAgentSuffix is appended to the user agent of shard's manager, so
// that an audit log tells the shards' requests apart (the field manager
// of their writes, the user agent's first word, stays rukpak's).
func UserAgentSuffix(shard string) string { return "shard/" + shard }

// Selector selects the objects of shard: those labelled with it, or for
// "" those without the label.
func Selector(shard string) labels.Selector {
	op, vals := selection.Equals, []string{shard}
	if shard == "" {
		op, vals = selection.DoesNotExist, nil
	}
	r, err := labels.NewRequirement(v1alpha2.LabelShard, op, vals)
	if err != nil {
		// Unreachable for a shard Validate accepts.
		panic(fmt.Sprintf("shard selector for %q: %v", shard, err))
	}
	return labels.NewSelector().Add(*r)
}

// Sharded selects the objects labelled with any shard.
func Sharded() labels.Selector {
	r, err := labels.NewRequirement(v1alpha2.LabelShard, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}

// Of returns the shard obj belongs to ("" when unsharded) and whether it
// carries the label at all.
func Of(obj metav1.Object) (string, bool) {
	s, ok := obj.GetLabels()[v1alpha2.LabelShard]
	return s, ok
}

// Live returns the shards whose announcement Lease was renewed within its
// duration at now. Leases without the shard label, a renew time or a
// duration announce nothing.
func Live(leases []coordinationv1.Lease, now time.Time) map[string]bool {
	live := map[string]bool{}
	for i := range leases {
		l := &leases[i]
		s, ok := Of(l)
		if !ok || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		until := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		if now.Before(until) {
			live[s] = true
		}
	}
	return live
}

// Unserved says why a BundleDeployment labelled with shard is served by
// no manager, given the live shards; "" when it is served.
func Unserved(shard string, live map[string]bool) string {
	switch {
	case shard == "":
		return fmt.Sprintf("the label %s is empty: no manager serves it; remove the label for the manager started without --shard", v1alpha2.LabelShard)
	case Validate(shard) != nil:
		return fmt.Sprintf("the label %s=%s names no shard a manager can run: %v", v1alpha2.LabelShard, shard, Validate(shard))
	case !live[shard]:
		return fmt.Sprintf("no manager of shard %q is running (its Lease %s/%s was not renewed): nothing reconciles this BundleDeployment; its objects stay as last applied", shard, v1alpha2.SystemNamespace, LeaseName(shard))
	}
	return ""
}
