package skills

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// DefaultCatalogBudget is the default size of the catalog, in characters.
const DefaultCatalogBudget = 8000

// CatalogEntry is one skill as the model sees it before loading it.
type CatalogEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// CatalogStep records one way the catalog was cut to fit its budget.
type CatalogStep struct {
	Action string   `json:"action"` // shortened | dropped
	Skills []string `json:"skills"`
	Detail string   `json:"detail"`
	Size   int      `json:"size"` // catalog size after the step
}

// Catalog is what the model is offered for progressive disclosure.
type Catalog struct {
	Entries []CatalogEntry `json:"entries"`
	Budget  int            `json:"budget"`
	Steps   []CatalogStep  `json:"steps"`
}

// ModelInvocable reports whether the model may discover and load s:
// `disable-model-invocation: true` keeps it out of the catalog (an
// operator's --skill preload still works).
func (s *Skill) ModelInvocable() bool {
	v, _ := s.Frontmatter["disable-model-invocation"].(bool)
	return !v
}

// catalogLine is how one entry is counted against the budget and shown.
func catalogLine(e CatalogEntry) string { return "- " + e.Name + ": " + e.Description + "\n" }

func catalogSize(es []CatalogEntry) int {
	n := 0
	for _, e := range es {
		n += utf8.RuneCountInString(catalogLine(e))
	}
	return n
}

// BuildCatalog lists the effective, model-invocable skills in precedence
// order (earlier roots first, then by name) within budget characters.
// Over budget, descriptions are shortened first (to 200, 100, then 50
// characters), then whole skills are dropped from the end, the lowest
// precedence first. Every cut is a step, so nothing is dropped silently.
func BuildCatalog(reg *Registry, budget int) Catalog {
	if budget <= 0 {
		budget = DefaultCatalogBudget
	}
	c := Catalog{Budget: budget, Entries: []CatalogEntry{}, Steps: []CatalogStep{}}
	if reg == nil {
		return c
	}
	var ss []*Skill
	for i := range reg.Skills {
		s := &reg.Skills[i]
		if s.ShadowedBy == "" && s.ModelInvocable() && s.IsEligible() {
			ss = append(ss, s)
		}
	}
	slices.SortStableFunc(ss, func(a, b *Skill) int {
		if a.rootIndex != b.rootIndex {
			return a.rootIndex - b.rootIndex
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, s := range ss {
		c.Entries = append(c.Entries, CatalogEntry{Name: s.Name, Description: strings.Join(strings.Fields(s.Description), " ")})
	}
	for _, limit := range []int{200, 100, 50} {
		if catalogSize(c.Entries) <= budget {
			return c
		}
		var cut []string
		for i := range c.Entries {
			if d := c.Entries[i].Description; utf8.RuneCountInString(d) > limit {
				c.Entries[i].Description = string([]rune(d)[:limit-1]) + "…"
				cut = append(cut, c.Entries[i].Name)
			}
		}
		if len(cut) > 0 {
			c.Steps = append(c.Steps, CatalogStep{Action: "shortened", Skills: cut, Size: catalogSize(c.Entries),
				Detail: fmt.Sprintf("catalog over its budget of %d characters: %d descriptions shortened to %d characters", budget, len(cut), limit)})
		}
	}
	// Drop whole skills from the end, the lowest precedence first, in one
	// recorded step however many go.
	var dropped []string
	size := catalogSize(c.Entries)
	for size > budget && len(c.Entries) > 0 {
		last := c.Entries[len(c.Entries)-1]
		dropped = append(dropped, last.Name)
		size -= utf8.RuneCountInString(catalogLine(last))
		c.Entries = c.Entries[:len(c.Entries)-1]
	}
	if len(dropped) > 0 {
		slices.Reverse(dropped)
		c.Steps = append(c.Steps, CatalogStep{Action: "dropped", Skills: dropped, Size: catalogSize(c.Entries),
			Detail: fmt.Sprintf("catalog over its budget of %d characters: %d skills left out, lowest precedence first (%s); raise --catalog-budget or preload them with --skill", budget, len(dropped), shortList(dropped, 5))})
	}
	return c
}

// Diagnostics turns the catalog's cuts into registry diagnostics.
func (c Catalog) Diagnostics() []Diagnostic {
	var ds []Diagnostic
	for _, st := range c.Steps {
		ds = append(ds, Diagnostic{Severity: SeverityWarning, Code: CodeCatalogTruncated, Detail: st.Detail, Path: "load_skill catalog"})
	}
	return ds
}

// Omitted is how many skills the budget left out of the catalog.
func (c Catalog) Omitted() int {
	n := 0
	for _, st := range c.Steps {
		if st.Action == "dropped" {
			n += len(st.Skills)
		}
	}
	return n
}

// Names lists the catalog's skill names in order.
func (c Catalog) Names() []string {
	out := make([]string, len(c.Entries))
	for i, e := range c.Entries {
		out[i] = e.Name
	}
	return out
}

// Text is the catalog as the load_skill tool description shows it.
func (c Catalog) Text() string {
	var b strings.Builder
	for _, e := range c.Entries {
		b.WriteString(catalogLine(e))
	}
	if n := c.Omitted(); n > 0 {
		fmt.Fprintf(&b, "(%d more skills are available but not listed here: %d in all. Use find_skills with what the task needs to find them.)\n", n, n+len(c.Entries))
	}
	return b.String()
}

func shortList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(xs[:n], ", "), len(xs)-n)
}
