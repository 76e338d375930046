package apply

// run is one Apply (or DryRun) of a Plan: the plan's owner and
// namespaces, a copy of its items on which the call records what it
// decides about each object (create, replace, takeOver), and the call's
// options. The Plan itself is never changed.
type run struct {
	owner      Owner
	items      []item
	namespaces map[string]bool
	// direct skips the dry-run before the first write
	// (ApplyOptions.Direct).
	direct bool
	// collisions, when set, are checked for objects that exist already
	// (ApplyOptions.Collisions).
	collisions *Collisions
	// hookRun is which hooks run (ApplyOptions.Hooks).
	hookRun HookRun
	// onHookWait is told of the hooks waited for
	// (ApplyOptions.OnHookWait).
	onHookWait func(HookWait)
}

// newRun returns a run of p with opts; its items are a copy of p's.
func newRun(p *Plan, opts ApplyOptions) *run {
	return &run{
		owner:      p.owner,
		items:      append([]item(nil), p.items...),
		namespaces: p.namespaces,
		direct:     opts.Direct,
		collisions: opts.Collisions,
		hookRun:    opts.Hooks,
		onHookWait: opts.OnHookWait,
	}
}
