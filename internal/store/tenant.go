package store

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// maxHoldersNamed is how many holders a refusal names; the rest are
// counted.
const maxHoldersNamed = 5

// CheckTenant fails with ResourceLimit, naming the quota and what holds
// it, when tenant's trees already fill its quota: a revision of that
// tenant need not be fetched to know it cannot be stored.
func (s *Store) CheckTenant(tenant string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fitsTenant(tenant, 1)
}

// TenantUsage returns the bytes of the trees tenant's revisions reference
// and, for each of them, which revisions, largest first.
func (s *Store) TenantUsage(tenant string) (int64, []HeldTree, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inUse, err := s.holders()
	if err != nil {
		return 0, nil, err
	}
	used, held := s.tenantUsage(tenant, inUse)
	return used, held, nil
}

// HeldTree is a tree a tenant's revisions reference.
type HeldTree struct {
	// Digest and Size are the tree's.
	Digest string
	Size   int64
	// Holders are the tenant's revisions that reference it.
	Holders []Holder
}

// tenantUsage sums the trees tenant's revisions reference; s.mu is held.
// A tree several tenants reference counts for each of them in full.
func (s *Store) tenantUsage(tenant string, inUse map[string][]Holder) (int64, []HeldTree) {
	var used int64
	var held []HeldTree
	for d, hs := range inUse {
		t, ok := s.trees[d]
		if !ok {
			continue
		}
		var mine []Holder
		for _, h := range hs {
			if h.Tenant == tenant {
				mine = append(mine, h)
			}
		}
		if len(mine) == 0 {
			continue
		}
		used += t.size
		held = append(held, HeldTree{Digest: d, Size: t.size, Holders: mine})
	}
	slices.SortFunc(held, func(a, b HeldTree) int {
		return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.Digest, b.Digest))
	})
	return used, held
}

// fitsTenant fails with ResourceLimit unless size more bytes fit in
// tenant's quota; s.mu is held. Nothing is evicted for a tenant: what
// counts against its quota is what its revisions reference.
func (s *Store) fitsTenant(tenant string, size int64) error {
	if s.tenantQuota <= 0 || tenant == "" {
		return nil
	}
	if size > s.tenantQuota {
		return failure.New(v1alpha2.ReasonResourceLimit,
			"the content is %s, larger than tenant %s's quota of %s in the content store", quantity(size), tenant, quantity(s.tenantQuota))
	}
	var renders int64
	if s.extra != nil {
		renders = s.extra(tenant)
	}
	if s.used+renders+size <= s.tenantQuota {
		// A tenant holds at most what the whole store holds: no need to
		// list who holds what (every Bundle) on each unpack.
		return nil
	}
	inUse, err := s.holders()
	if err != nil {
		return err
	}
	used, held := s.tenantUsage(tenant, inUse)
	if used+renders+size <= s.tenantQuota {
		return nil
	}
	needs := ""
	if used+renders < s.tenantQuota {
		needs = fmt.Sprintf(", and the new content needs %s more", quantity(size))
	}
	kept := ""
	if renders > 0 {
		kept = fmt.Sprintf(", and its renders kept in the cluster %s", quantity(renders))
	}
	return failure.New(v1alpha2.ReasonResourceLimit,
		"tenant %s's quota of %s in the content store is full: it holds %s (%s)%s%s; delete revisions or BundleDeployments of the tenant to make room",
		tenant, quantity(s.tenantQuota), quantity(used), describeHeld(held), kept, needs)
}

// describeHeld names the largest trees and their revisions:
// "Bundle x of BundleDeployment y: 512Mi, ...".
func describeHeld(held []HeldTree) string {
	parts := make([]string, 0, min(len(held), maxHoldersNamed)+1)
	for _, h := range held[:min(len(held), maxHoldersNamed)] {
		names := make([]string, len(h.Holders))
		for i, r := range h.Holders {
			names[i] = "Bundle " + r.Bundle
			if r.BundleDeployment != "" {
				names[i] += " of BundleDeployment " + r.BundleDeployment
			}
		}
		parts = append(parts, strings.Join(names, " and ")+": "+quantity(h.Size))
	}
	if n := len(held) - maxHoldersNamed; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, ", ")
}

// quantity formats n bytes for a message: "300 bytes", "24 MiB",
// "2.5 GiB".
func quantity(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " " + units[i]
}
