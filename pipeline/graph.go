package pipeline

import "slices"

// order is the phases in dependency order: each phase after everything it
// needs, ties broken by file order, so the order (and the exit code that
// depends on it) is the same on every machine.
func order(ps []Phase) []string {
	done := map[string]bool{}
	var out []string
	for len(out) < len(ps) {
		progressed := false
		for _, p := range ps {
			if done[p.Name] {
				continue
			}
			ready := true
			for _, n := range p.Needs {
				if !done[n] {
					ready = false
					break
				}
			}
			if ready {
				done[p.Name] = true
				out = append(out, p.Name)
				progressed = true
				break
			}
		}
		if !progressed {
			return out // a cycle; check refuses those before this is used
		}
	}
	return out
}

// cycle returns one cycle among the needs (its first phase repeated at the
// end), or nil.
func cycle(ps []Phase) []string {
	needs := map[string][]string{}
	for _, p := range ps {
		needs[p.Name] = p.Needs
	}
	const (
		unseen = iota
		active
		finished
	)
	state := map[string]int{}
	var stack []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		state[n] = active
		stack = append(stack, n)
		for _, m := range needs[n] {
			switch state[m] {
			case active:
				i := slices.Index(stack, m)
				found = append(slices.Clone(stack[i:]), m)
				return true
			case unseen:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = finished
		return false
	}
	for _, p := range ps {
		if state[p.Name] == unseen && visit(p.Name) {
			return found
		}
	}
	return nil
}

// Order is the phases' names in the order they start when run one at a
// time: dependency order, ties broken by file order.
func (f *File) Order() []string { return order(f.Phases) }
