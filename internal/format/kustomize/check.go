package kustomize

import (
	"fmt"
	"path"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// cost is what a kustomization makes the build read: files and bytes,
// its bases' included, counting a base once per use.
type cost struct {
	files int
	bytes int64
}

// checker checks the kustomizations a build reaches before kustomize sees
// them (see the package doc, step 2).
type checker struct {
	b      *bundle
	limits Limits
	rf     *resource.Factory
	rmf    *resmap.Factory
	// done holds the cost of each directory already checked.
	done map[string]cost
	// active holds the directories being checked, to stop at cycles.
	active map[string]bool
	// reached are the files the kustomizations name, in the order found
	// (a file may be there more than once).
	reached []string
	// checked are the files checked for alias bombs.
	checked map[string]bool
}

// check checks the kustomization at the root of b and the ones it reaches.
// It parses with kustomize's own functions, so that it reads entries as the
// build will.
func check(b *bundle, limits Limits) (err error) {
	defer recovered(rootFile(b), &err)
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	c := &checker{
		b: b, limits: limits, rf: rf, rmf: resmap.NewFactory(rf),
		done: map[string]cost{}, active: map[string]bool{}, checked: map[string]bool{},
	}
	total, err := c.dir(".")
	if err != nil {
		return err
	}
	root := rootFile(b)
	if total.files > limits.MaxFiles {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: the build reads more than %d files, counting a base once per use", root, limits.MaxFiles)
	}
	if total.bytes > limits.MaxTotalBytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: the build reads more than %d bytes, counting a base once per use", root, limits.MaxTotalBytes)
	}
	// Within the limits: the files reached are read for alias bombs.
	for _, p := range c.reached {
		if err := c.aliases(p); err != nil {
			return err
		}
	}
	return nil
}

// add returns a+b, capped just over the limits so that a base used an
// exponential number of times cannot overflow the count.
func (c *checker) add(a, b cost) cost {
	return cost{
		files: min(a.files+b.files, c.limits.MaxFiles+1),
		bytes: min(a.bytes+b.bytes, c.limits.MaxTotalBytes+1),
	}
}

// kustomizationFile returns the path of the kustomization file of
// directory d, or "".
func (b *bundle) kustomizationFile(d string) string {
	for _, name := range FileNames() {
		if p := path.Join(d, name); b.isFile(p) {
			return p
		}
	}
	return ""
}

// rootFile returns the path of the root kustomization file, to name in
// messages.
func rootFile(b *bundle) string {
	if p := b.kustomizationFile("."); p != "" {
		return p
	}
	return FileNames()[0]
}

// isFile reports whether the bundle has a regular file at p.
func (c *checker) isFile(p string) bool { return c.b.isFile(p) }

// fileCost is the cost of reading the file at p once.
func (c *checker) fileCost(p string) cost {
	return cost{files: 1, bytes: c.b.size(p)}
}

// dir checks the kustomization of directory d and returns its cost. What
// kustomize itself refuses (no kustomization file, a file it cannot parse,
// a cycle) is left for it to report.
func (c *checker) dir(d string) (cost, error) {
	if v, ok := c.done[d]; ok {
		return v, nil
	}
	kf := c.b.kustomizationFile(d)
	if kf == "" || c.active[d] {
		return cost{}, nil
	}
	c.active[d] = true
	defer delete(c.active, d)
	data, err := c.b.read(kf)
	if err != nil {
		return cost{}, err
	}
	v := &visit{c: c, dir: d, file: kf, cost: c.fileCost(kf)}
	var k types.Kustomization
	// kustomize parses with the same function and reports the same error.
	if k.Unmarshal(data) == nil {
		if err := v.kustomization(&k); err != nil {
			return cost{}, err
		}
	}
	c.done[d] = v.cost
	return v.cost, nil
}

// visit checks one kustomization file.
type visit struct {
	c *checker
	// dir is the kustomization's directory, file its kustomization file.
	dir, file string
	cost      cost
}

// refuse returns an InvalidContent failure about entry of field.
func (v *visit) refuse(field, entry, why string) error {
	return failure.New(v1alpha2.ReasonInvalidContent, "%s: %s entry %q %s", v.file, field, entry, why)
}

// ref returns the bundle path entry of field names, or refuses it.
func (v *visit) ref(field, entry string) (string, error) {
	p, kind := resolve(v.dir, entry)
	switch kind {
	case refRemote:
		return "", v.refuse(field, entry, "is a remote reference: a kustomize bundle must hold everything "+
			"it uses; URLs and git repositories are never fetched")
	case refAbsolute:
		return "", v.refuse(field, entry, "is an absolute path: paths are relative to the kustomization's directory")
	case refOutside:
		return "", v.refuse(field, entry, "leaves the bundle")
	}
	return p, nil
}

// files checks entries that name files and counts the ones that exist.
func (v *visit) files(field string, entries ...string) error {
	for _, e := range entries {
		p, err := v.ref(field, e)
		if err != nil {
			return err
		}
		if v.c.isFile(p) {
			v.c.reached = append(v.c.reached, p)
			v.cost = v.c.add(v.cost, v.c.fileCost(p))
		}
	}
	return nil
}

// bases checks entries that name a file or a kustomization directory, and
// the kustomizations of those directories.
func (v *visit) bases(field string, entries []string) error {
	for _, e := range entries {
		p, err := v.ref(field, e)
		if err != nil {
			return err
		}
		switch {
		case v.c.isFile(p):
			v.c.reached = append(v.c.reached, p)
			v.cost = v.c.add(v.cost, v.c.fileCost(p))
		case v.c.b.isDir(p):
			sub, err := v.c.dir(p)
			if err != nil {
				return err
			}
			v.cost = v.c.add(v.cost, sub)
		}
	}
	return nil
}

// field names a field of an item of a list, as in "patches[2].path".
func field(list string, i int, name string) string {
	return fmt.Sprintf("%s[%d].%s", list, i, name)
}
