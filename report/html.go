package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

//go:embed report.html.tmpl
var pageTemplate string

// maxChildDepth bounds how deep child runs are drawn into one report.
const maxChildDepth = 3

// foldAt is the length over which a text is shown folded.
const foldAt = 1200

// Page is what a report shows: one run (with its children), or a pipeline
// or batch with a run per unit.
type Page struct {
	Title     string
	Generated time.Time
	Kind      string // run, pipeline, batch
	Run       *RunPage
	Set       *SetPage
	// Banner says what does not verify, first thing on the page; Status
	// is then "does not verify" (verdict.go).
	Banner []string
	Status string
	// Up links a task's page back to its batch's index.
	Up string
}

// RunPage is one run with what the report adds to `harness show`: tool
// outputs, resource reads, script executions, identity and duration.
type RunPage struct {
	*RunView
	Verdict Verdict
	// Tiers are the loaded skills' manifest tiers, by name.
	Tiers      map[string]string
	Anchor     string
	Identity   artifacts.Digest
	Duration   string
	Total      int64
	Outputs    map[string]string // call id -> tool output content
	Reads      []record.ResourceRead
	Scripts    []record.ScriptExecution
	Commands   []record.CommandExecution
	Chart      template.HTML // inline SVG, built from numbers only
	ChildPages []*RunPage
	// ChildOf links a delegate_task call to its child's section: a child
	// run is named by the id of the call that started it.
	ChildOf map[string]string
}

// SetPage is a pipeline or a batch: its units, their runs and, for a
// pipeline, the dependency graph.
type SetPage struct {
	ID       string
	Status   string
	ExitCode int
	Message  string
	Units    []UnitRow
	// The set's usage per model and what it cost, summed over its units.
	record.ModelCosts
	Graph template.HTML // inline SVG, built from names escaped here
	Runs  []*RunPage
}

// TakeJournal shows the result the set's journal gives in place of a
// result file that does not verify: its status, and each unit's line.
func (sp *SetPage) TakeJournal(r *record.PipelineResult) {
	sp.Status, sp.ExitCode, sp.Message, sp.ModelCosts = r.Status, r.ExitCode, r.Message, r.ModelCosts
	byName := map[string]record.PhaseOutcome{}
	for _, u := range append(r.Phases, r.Tasks...) {
		byName[u.Name] = u
	}
	for i := range sp.Units {
		if u, ok := byName[sp.Units[i].Name]; ok {
			sp.Units[i].PhaseOutcome = u
		}
	}
}

// UnitRow is one phase or task in the table.
type UnitRow struct {
	record.PhaseOutcome
	Anchor string
	// Href is where the unit's run is shown: its section (#Anchor), or
	// its own page (a batch's).
	Href  string
	Needs []string
}

// RunReport reads a run directory into a page.
func RunReport(dir string, now time.Time) (*Page, error) {
	rp, err := runPage(dir, "run", 0)
	if err != nil {
		return nil, err
	}
	return &Page{Title: "harness run " + rp.RunID, Generated: now.UTC(), Kind: "run", Run: rp}, nil
}

func runPage(dir, anchor string, depth int) (*RunPage, error) {
	v, err := Show(dir)
	if err != nil {
		return nil, err
	}
	m, _ := record.ReadManifest(v.RunDir)
	rp := &RunPage{RunView: v, Anchor: anchor, Identity: m.Identity.Digest, Total: m.Usage.Total.TotalTokens,
		Outputs: map[string]string{}, ChildOf: map[string]string{}}
	if m.FinishedAt != nil {
		rp.Duration = m.FinishedAt.Sub(m.StartedAt).Round(time.Millisecond).String()
	}
	for _, t := range v.Turns {
		for _, c := range t.Calls {
			if c.Output == "" {
				continue
			}
			data, err := artifacts.ReadBeneath(v.RunDir, c.Output)
			if err != nil {
				continue
			}
			var out struct {
				Content string `json:"content"`
			}
			if json.Unmarshal(data, &out) == nil {
				rp.Outputs[c.ID] = readable(out.Content)
			}
		}
	}
	var reads record.ResourceReads
	if data, err := artifacts.ReadBeneath(v.RunDir, record.FileResourceReads); err == nil && json.Unmarshal(data, &reads) == nil {
		rp.Reads = reads.Reads
	}
	var policy record.PolicySnapshot
	if data, err := artifacts.ReadBeneath(v.RunDir, record.FilePolicySnapshot); err == nil && json.Unmarshal(data, &policy) == nil {
		rp.Tiers = map[string]string{}
		for _, s := range policy.LoadedSkills {
			rp.Tiers[s.Name] = s.Tier.String()
			if s.Destructive {
				rp.Tiers[s.Name] += ", destructive"
			}
		}
	}
	var execs record.ScriptExecutions
	if data, err := artifacts.ReadBeneath(v.RunDir, record.FileScriptExecutions); err == nil && json.Unmarshal(data, &execs) == nil {
		rp.Scripts = execs.Executions
	}
	var cmds record.CommandExecutions
	if data, err := artifacts.ReadBeneath(v.RunDir, record.FileCommandExecutions); err == nil && json.Unmarshal(data, &cmds) == nil {
		rp.Commands = cmds.Executions
	}
	rp.Chart = usageChart(v.Turns)
	if depth < maxChildDepth {
		for i, c := range v.Children {
			cp, err := runPage(c.RunDir, fmt.Sprintf("%s-child-%d", anchor, i+1), depth+1)
			if err == nil {
				rp.ChildPages = append(rp.ChildPages, cp)
				rp.ChildOf[cp.RunID] = cp.Anchor
			}
		}
	}
	return rp, nil
}

// SetReport reads a pipeline or batch directory into a page.
func SetReport(dir string, now time.Time) (*Page, error) {
	kind, manifest, result, runs := "pipeline", record.FilePipeline, record.FilePipelineResult, record.DirPhases
	if _, err := os.Stat(filepath.Join(dir, record.FileBatch)); err == nil {
		kind, manifest, result, runs = "batch", record.FileBatch, record.FileBatchResult, record.DirBatchRuns
	}
	var m record.PipelineManifest
	mb, err := artifacts.ReadBeneath(dir, manifest)
	if err != nil || json.Unmarshal(mb, &m) != nil {
		return nil, fmt.Errorf("%s is not a run, pipeline or batch directory", dir)
	}
	var r record.PipelineResult
	if rb, err := artifacts.ReadBeneath(dir, result); err == nil {
		json.Unmarshal(rb, &r)
	}
	sp := &SetPage{ID: m.ID(), Status: r.Status, ExitCode: r.ExitCode, Message: r.Message, ModelCosts: r.ModelCosts}
	if sp.Status == "" {
		sp.Status = "running or stopped (no result yet)"
	}
	needs := map[string][]string{}
	for _, p := range append(m.Phases, m.Tasks...) {
		needs[p.Name] = p.Needs
	}
	units := append(r.Phases, r.Tasks...)
	if len(units) == 0 {
		for _, p := range append(m.Phases, m.Tasks...) {
			units = append(units, record.PhaseOutcome{Name: p.Name, Status: "not finished", RunDir: p.RunDir})
		}
	}
	for i, u := range units {
		row := UnitRow{PhaseOutcome: u, Needs: needs[u.Name]}
		if u.RunDir != "" && filepath.IsLocal(u.Name) && filepath.Base(u.Name) == u.Name {
			// A unit's run is where harness puts it, beneath the
			// directory as it is now (which may have been copied or
			// moved as a whole), never where a recorded path says: the
			// verifier holds the recorded path to this place.
			row.RunDir = filepath.Join(dir, runs, u.Name)
			row.Anchor = fmt.Sprintf("unit-%d", i+1)
			row.Href = "#" + row.Anchor
			if rp, err := unitPage(dir, filepath.Join(runs, u.Name), row.RunDir, row.Anchor); err == nil {
				sp.Runs = append(sp.Runs, rp)
			} else {
				row.Anchor = ""
			}
		}
		sp.Units = append(sp.Units, row)
	}
	if kind == "pipeline" {
		sp.Graph = dependencyGraph(sp.Units)
	}
	return &Page{Title: fmt.Sprintf("harness %s %s", kind, m.ID()), Generated: now.UTC(), Kind: kind, Set: sp}, nil
}

// unitPage reads the run directory rel of a pipeline or batch directory
// dir through one descriptor, opened beneath dir through no link, and
// shows it under its path shown: a directory swapped in at that path while
// the page is read is not the one read.
func unitPage(dir, rel, shown, anchor string) (*RunPage, error) {
	d, err := artifacts.OpenDirBeneath(dir, rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd := artifacts.DirPath(d)
	rp, err := runPage(fd, anchor, 1)
	if err != nil {
		return nil, err
	}
	relocate(rp, fd, shown)
	return rp, nil
}

// relocate names the runs of a page read through the descriptor path from
// by the path to they are shown under.
func relocate(rp *RunPage, from, to string) {
	move := func(p string) string {
		if rest, ok := strings.CutPrefix(p, from); ok {
			return to + rest
		}
		return p
	}
	rp.RunDir = move(rp.RunDir)
	rp.ResumeWith = strings.ReplaceAll(rp.ResumeWith, from, to)
	for i := range rp.Children {
		rp.Children[i].RunDir = move(rp.Children[i].RunDir)
	}
	for _, c := range rp.ChildPages {
		relocate(c, from, to)
	}
}

// Report reads any of the three kinds of directory.
func Report(dir string, now time.Time) (*Page, error) {
	if _, err := os.Stat(filepath.Join(dir, record.FileManifest)); err == nil {
		return RunReport(dir, now)
	}
	return SetReport(dir, now)
}

// PageFile is one file of a report: a name relative to the report's files
// directory, and its page.
type PageFile struct {
	Name string
	Page *Page
}

// SplitBatch makes a batch's report an index of its tasks and a page per
// task in the directory files (relative to the index), so that a batch of
// thousands opens at once; each task page links back to index. A run that
// does not verify carries its banner line on its own page as well.
func (p *Page) SplitBatch(files, index string) []PageFile {
	if p.Set == nil || p.Kind != "batch" {
		return nil
	}
	byAnchor := map[string]*RunPage{}
	for _, rp := range p.Set.Runs {
		byAnchor[rp.Anchor] = rp
	}
	var out []PageFile
	for i := range p.Set.Units {
		u := &p.Set.Units[i]
		rp := byAnchor[u.Anchor]
		if rp == nil {
			continue
		}
		name := u.Anchor + ".html"
		u.Href = files + "/" + name
		tp := &Page{Title: p.Title + ": task " + u.Name, Generated: p.Generated, Kind: "run", Run: rp, Up: "../" + index}
		for _, b := range p.Banner {
			if strings.HasPrefix(b, "run "+rp.RunID+" ") {
				tp.Banner, tp.Status = append(tp.Banner, b), p.Status
			}
		}
		out = append(out, PageFile{Name: name, Page: tp})
	}
	p.Set.Runs = nil
	return out
}

// WriteHTML renders a page as one self-contained HTML file: styles inline,
// no script, nothing loaded from anywhere. Every text from a model, a tool
// or a file goes through html/template's escaping.
func WriteHTML(w io.Writer, p *Page) error {
	t, err := template.New("page").Funcs(template.FuncMap{
		"long":  func(s string) bool { return len(s) > foldAt || strings.Count(s, "\n") > 20 },
		"first": firstLines,
		"join":  strings.Join,
		"short": func(d artifacts.Digest) string { return shorten(strings.TrimPrefix(string(d), "blake3:"), 12) },
		"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"grant": grantSummary,
		"cost":  func(c *float64) string { return strings.TrimPrefix(costText(c), ", cost ") },
		"deref": func(p *int) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprint(*p)
		},
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, p)
}

// usageChart draws tokens per turn as bars. The SVG is built from numbers
// alone, so it is safe to mark as HTML.
func usageChart(turns []TurnView) template.HTML {
	if len(turns) == 0 {
		return ""
	}
	var top int64 = 1
	for _, t := range turns {
		top = max(top, t.Usage)
	}
	const h, bw, gap = 80, 14, 4
	width := len(turns)*(bw+gap) + gap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="tokens per turn" width="%d" height="%d" viewBox="0 0 %d %d">`, width, h+16, width, h+16)
	for i, t := range turns {
		bh := int(float64(t.Usage) / float64(top) * h)
		x := gap + i*(bw+gap)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d"><title>turn %d: %d tokens</title></rect>`, x, h-bh, bw, bh, t.Turn, t.Usage)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%d</text>`, x+bw/2, h+12, t.Turn)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// dependencyGraph draws a pipeline's phases in columns by depth, with an
// arrow from each phase it needs. Names are escaped before they go in.
func dependencyGraph(units []UnitRow) template.HTML {
	depth := map[string]int{}
	var level func(n string, seen map[string]bool) int
	byName := map[string]UnitRow{}
	for _, u := range units {
		byName[u.Name] = u
	}
	level = func(n string, seen map[string]bool) int {
		if d, ok := depth[n]; ok {
			return d
		}
		if seen[n] {
			return 0
		}
		seen[n] = true
		d := 0
		for _, m := range byName[n].Needs {
			d = max(d, level(m, seen)+1)
		}
		depth[n] = d
		return d
	}
	rows := map[int]int{}
	pos := map[string][2]int{}
	maxRow, maxCol := 0, 0
	for _, u := range units {
		c := level(u.Name, map[string]bool{})
		pos[u.Name] = [2]int{c, rows[c]}
		maxRow, maxCol = max(maxRow, rows[c]), max(maxCol, c)
		rows[c]++
	}
	const bw, bh, gx, gy = 150, 34, 60, 18
	W, H := (maxCol+1)*(bw+gx), (maxRow+1)*(bh+gy)+gy
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" role="img" aria-label="phase dependencies" width="%d" height="%d" viewBox="0 0 %d %d">`, W, H, W, H)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>`)
	xy := func(n string) (int, int) { p := pos[n]; return p[0]*(bw+gx) + 10, p[1]*(bh+gy) + gy }
	for _, u := range units {
		x2, y2 := xy(u.Name)
		for _, n := range u.Needs {
			if _, ok := pos[n]; !ok {
				continue
			}
			x1, y1 := xy(n)
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" marker-end="url(#arrow)"/>`, x1+bw, y1+bh/2, x2, y2+bh/2)
		}
	}
	for _, u := range units {
		x, y := xy(u.Name)
		name := template.HTMLEscapeString(shorten(u.Name, 20))
		fmt.Fprintf(&b, `<g class="node %s"><rect x="%d" y="%d" width="%d" height="%d" rx="6"/><text x="%d" y="%d">%s</text></g>`,
			template.HTMLEscapeString(statusClass(u.Status)), x, y, bw, bh, x+bw/2, y+bh/2+5, name)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func statusClass(s string) string {
	switch s {
	case "succeeded":
		return "ok"
	case "skipped", "not_started", "not finished":
		return "skip"
	}
	return "bad"
}

// readable indents a JSON tool result without escaping markup, so a
// reviewer reads "<script>" where the model read it; the template escapes
// it for the page. Anything that is not JSON is shown as it is.
func readable(content string) string {
	var v any
	if json.Unmarshal([]byte(content), &v) != nil {
		return content
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return content
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// grantSummary says in one line what an execution was given and what
// enforced it.
func grantSummary(g *record.Grant) string {
	if g == nil {
		return "-"
	}
	if !g.Declared {
		return fmt.Sprintf("undeclared: whole workspace read-write, any program (%s)", g.EnforcedBy["filesystem"])
	}
	list := func(ps []string) string {
		if len(ps) == 0 {
			return "nothing"
		}
		return strings.Join(ps, ", ")
	}
	s := fmt.Sprintf("read %s; write %s; exec %s", list(g.Read), list(g.Write), list(g.Exec))
	if len(g.Env) > 0 {
		s += "; env " + strings.Join(g.Env, ", ")
	}
	return s + fmt.Sprintf(" (files: %s; exec: %s)", g.EnforcedBy["filesystem"], g.EnforcedBy["exec"])
}
