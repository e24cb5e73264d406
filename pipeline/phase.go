package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/resolve"
	"github.com/harness-dev/harness/run"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// templateData is what a phase's prompt and attach entries are filled
// from: the vars, and the phases it needs (only those: a phase reads what
// it names). Keys are lower-case as in the file: .vars.x, .phases.spec.answer.
func (p *pipe) templateData(ph *Phase) map[string]any {
	phases := map[string]any{}
	for _, n := range ph.Needs {
		d := p.done[n]
		v := map[string]any{"answer": "", "structuredOutput": nil, "status": d.outcome.Status, "answerFile": "", "runDir": ""}
		if d.outcome.RunDir != "" {
			v["runDir"] = p.runDir(n)
		}
		if d.result != nil {
			v["answer"] = d.result.Answer
			if len(d.result.StructuredOutput) > 0 {
				var so any
				if json.Unmarshal(d.result.StructuredOutput, &so) == nil {
					v["structuredOutput"] = so
				}
			}
			if d.result.Answer != "" {
				v["answerFile"] = p.answerFile(n)
			}
		}
		phases[n] = v
	}
	vars := map[string]any{}
	for k, val := range p.file.Vars {
		vars[k] = val
	}
	for k, val := range ph.vars {
		vars[k] = val
	}
	return map[string]any{"vars": vars, "phases": phases, "task": map[string]any{"id": ph.Name}}
}

func (p *pipe) answerFile(name string) string {
	return filepath.Join(p.dir, record.DirAnswers, name+".md")
}

// runPhase runs (or resumes) one phase as a harness run and reports how
// it ended. It touches no pipeline state: the scheduler records the
// outcome.
func (p *pipe) runPhase(ctx context.Context, ph *Phase, resume bool, data map[string]any, handed map[string]artifacts.Digest) *phaseDone {
	started := clock(p.common.Now)()
	stderr := newPrefixWriter(p.out, "["+ph.Name+"] ")
	defer stderr.Flush()
	var res *run.Result
	var err error
	if resume {
		r := p.resumed.Settings
		var rs run.Options
		apply(r, &rs)
		res, err = run.Resume(ctx, run.ResumeOptions{
			RequestTimeout: rs.RequestTimeout, MaxRetries: r.MaxRetries, RetryMaxWait: rs.RetryMaxWait, Timeout: rs.Timeout,
			MaxTokens: rs.MaxTokens, FallbackModel: r.FallbackModel, Stream: rs.Stream,
			RunDir: p.runDir(ph.Name), APIKey: p.common.APIKey, RunKey: p.common.RunKey, MaxTurns: p.maxTurns, BaseURL: p.baseURL,
			Record: p.cassette(p.manifest.Record, ph.Name), Replay: p.cassette(p.manifest.Replay, ph.Name),
			Stderr: stderr, Now: p.common.Now, Version: p.common.Version, SnapshotCache: p.common.SnapshotCache,
			// The run recorded where the pipeline directory was; it is
			// protected where it is now too.
			Protect: []string{p.dir},
			Approve: p.decisions[ph.Name].approve, Deny: p.decisions[ph.Name].deny, DenyReason: p.decisionReason, Actor: p.decisionActor,
		})
	} else if err = p.checkHandOff(handed); err == nil {
		var opts run.Options
		opts, err = p.options(ph, data)
		if err == nil {
			opts.Stderr = stderr
			res, err = run.Run(ctx, opts)
		}
	}
	d := &phaseDone{outcome: record.PhaseOutcome{Name: ph.Name, DurationMs: clock(p.common.Now)().Sub(started).Milliseconds()}}
	if res == nil || res.Record == nil {
		// Refused before a run directory existed (a bad template, a
		// missing file): nothing else records why, so this does.
		e := outcome.As(err)
		status, _ := outcome.Status(e.Exit)
		if e.Exit == outcome.ExitUsage || e.Exit == outcome.ExitPolicy {
			status = "refused"
		}
		d.outcome.Status, d.outcome.Reason, d.outcome.ExitCode, d.outcome.Message = status, e.Code, e.Exit, e.Error()
		// Messages about a unit already name it: say it once.
		fmt.Fprintf(stderr, "harness: %s %s refused: %s\n", p.layout.unit, ph.Name, strings.TrimPrefix(e.Error(), p.layout.unit+" "+ph.Name+": "))
		return d
	}
	r := res.Record
	d.result = r
	d.outcome.Status, d.outcome.Reason, d.outcome.ExitCode, d.outcome.Message = r.Status, r.Reason, r.ExitCode, r.Message
	d.outcome.RunDir, d.outcome.Usage, d.outcome.PendingApprovals = p.recordedRunDir(ph.Name), r.Usage, r.PendingApprovals
	if m, merr := rundir.ReadManifest(res.RunDir); merr == nil {
		d.outcome.RunID, d.outcome.JournalHead = m.RunID, m.JournalHead
	}
	d.outcome.UsageByModel = r.UsageByModel
	if b, rerr := artifacts.ReadBeneath(res.RunDir, record.FileResult); rerr == nil {
		d.outcome.ResultDigest = artifacts.DigestBytes(b)
	}
	if r.Answer != "" {
		werr := os.MkdirAll(filepath.Dir(p.answerFile(ph.Name)), 0o755)
		if werr == nil {
			werr = artifacts.WriteFile(p.answerFile(ph.Name), []byte(r.Answer), 0o644)
			d.outcome.AnswerDigest = artifacts.DigestString(r.Answer)
		}
		if werr != nil {
			d.outcome.Status, d.outcome.ExitCode = "failed", outcome.ExitFailed
			d.outcome.Message = fmt.Sprintf("the answer could not be kept for later phases: %v", werr)
		}
	}
	return d
}

// cassette is a phase's cassette file in a cassette directory; a
// cassette given as a file is shared by every task (they ask alike).
func (p *pipe) cassette(dir, phase string) string {
	if dir == "" {
		return ""
	}
	if st, err := os.Stat(dir); err == nil && st.Mode().IsRegular() {
		return dir
	}
	return filepath.Join(dir, phase+".jsonl")
}

// options builds the run a phase is: the defaults, then what the phase
// names. Skills, tools and scripts come from the phase alone.
func (p *pipe) options(ph *Phase, data map[string]any) (run.Options, error) {
	f := p.file
	d, sources := p.settings()
	prompt, err := render(ph.prompt, data)
	if err != nil {
		return run.Options{}, outcome.Usage("phase_prompt_invalid", "%s %s: the prompt cannot be filled in: %v (it reads only .vars, .task and the phases in its needs)", p.layout.unit, ph.Name, err)
	}
	readsPhases := ph.readsPhases || dependsOnPhases(ph.prompt, data, prompt)
	role, roleSource := d.PromptRole, sources["prompt-role"]
	switch {
	case ph.PromptRole == "" && !readsPhases && role == "":
		roleSource = "default"
	case ph.PromptRole != "":
		role, roleSource = ph.PromptRole, p.layout.unit+" field"
	case readsPhases:
		// Earlier phases' answers are model output, not the operator's
		// words: they must not authorize write or side-effect tools
		// unless the phase says so itself (prompt-role: direct-command).
		role, roleSource = "context", "pipeline: the prompt reads earlier phases' output"
	}
	o := run.Options{
		Workspace:         f.Dir,
		MaxTurns:          runopts.DefaultMaxTurns,
		SchemaRetries:     runopts.DefaultSchemaRetries,
		CatalogBudget:     runopts.DefaultCatalogBudget,
		MaxRetries:        ptr(runopts.DefaultMaxRetries),
		Skills:            ph.Skills,
		Prompt:            prompt,
		PromptSource:      "pipeline:" + ph.Name,
		APIKey:            p.common.APIKey,
		RunKey:            p.common.RunKey,
		AllowTools:        ph.AllowTools,
		AllowSkillScripts: ph.AllowSkillScripts,
		AllowNetwork:      ph.AllowNetwork,
		AllowCommands:     ph.AllowCommands,
		ConfirmTools:      ph.ConfirmTools,
		ArtifactsDir:      filepath.Join(p.dir, p.layout.runs),
		RunID:             ph.Name,
		Record:            p.cassette(p.manifest.Record, ph.Name),
		Replay:            p.cassette(p.manifest.Replay, ph.Name),
		Protect:           nonEmpty(p.dir, p.manifest.Record, p.manifest.Replay),
		Previous:          p.previous,
		Audits:            p.audits,
		Now:               p.common.Now,
		Version:           p.common.Version,
		SnapshotCache:     p.common.SnapshotCache,
		ConfigFile:        f.Path,
	}
	apply(d, &o)
	o.BaseURL = firstOf(p.endpoint, p.manifest.BaseURL, d.BaseURL)
	if p.manifest.Workspace != "" {
		o.Workspace, sources["workspace"] = p.manifest.Workspace, "flag"
	}
	if ph.Workspace != "" {
		shared := o.Workspace
		o.Workspace, sources["workspace"] = f.abs(ph.Workspace), p.layout.unit+" field"
		ws, err := unitWorkspace(o.Workspace, f.abs(shared))
		if err != nil {
			return o, outcome.Policy("phase_workspace_link", "%s %s: workspace %s %v", p.layout.unit, ph.Name, ph.Workspace, err)
		}
		o.Workspace = ws
	}
	if ph.ExternalSkillsRoot != nil {
		o.SkillsRoots, o.ExternalSkillsRoots = nil, nil
		for _, r := range ph.ExternalSkillsRoot {
			o.ExternalSkillsRoots = append(o.ExternalSkillsRoots, f.abs(r))
		}
		sources["skills-root"], sources["external-skills-root"] = p.layout.unit+" field", p.layout.unit+" field"
	}
	o.PromptRole = role
	sources["prompt-role"] = roleSource
	if ph.Model != "" {
		o.Model, sources["model"] = ph.Model, p.layout.unit+" field"
	}
	if ph.Tier != "" {
		model, mapped := o.TierModel(ph.Tier)
		switch {
		case !mapped && ph.Tier == "vision":
			return o, outcome.Usage("tier_unmapped", "%s %s asks for tier vision, and no model is marked as able to see images: map one with --tier vision=MODEL (or tier: in the file's defaults)", p.layout.unit, ph.Name)
		case !mapped:
			fmt.Fprintf(p.out, "harness: %s %s asks for tier %s, which no --tier maps: it runs on %s\n", p.layout.unit, ph.Name, ph.Tier, model)
			sources["model"] = p.layout.unit + " tier " + ph.Tier + " (unmapped: the run's model)"
		default:
			sources["model"] = p.layout.unit + " tier " + ph.Tier
		}
		o.Model = model
	}
	if ph.MaxTurns != nil {
		o.MaxTurns, sources["max-turns"] = *ph.MaxTurns, p.layout.unit+" field"
	}
	if ph.MaxTokens > 0 {
		o.MaxTokens, sources["max-tokens"] = ph.MaxTokens, p.layout.unit+" field"
	}
	if ph.Timeout != "" {
		o.Timeout, _ = time.ParseDuration(ph.Timeout) // checked at load
		sources["timeout"] = p.layout.unit + " field"
	}
	o.Sources = sources
	if ph.OutputSchema != "" {
		b, err := readBounded(f.abs(ph.OutputSchema))
		if err != nil {
			return o, outcome.Usage("phase_output_schema_invalid", "%s %s: output-schema %s: %v", p.layout.unit, ph.Name, ph.OutputSchema, err)
		}
		o.OutputSchema = b
	}
	for _, entry := range ph.Attach {
		a := entry
		t, err := template.New("attach").Option("missingkey=error").Parse(a)
		if err == nil {
			a, err = render(t, data)
		}
		if err != nil {
			return o, outcome.Usage("phase_attach_invalid", "%s %s: attach %q: %v", p.layout.unit, ph.Name, a, err)
		}
		if a == "" {
			return o, outcome.Usage("phase_attach_invalid", "%s %s: an attach entry is empty once filled in (a phase it needs left no answer?)", p.layout.unit, ph.Name)
		}
		if dependsOnPhases(t, data, a) && !p.mayAttach(f.abs(a), o.Workspace, data) {
			return o, outcome.Usage("phase_attach_outside", "%s %s: attach %q is filled in as %q, neither in the workspace nor the answer file of a %s this one needs: a path an earlier %s's words give is attached only from there (name any other file in the entry itself)", p.layout.unit, ph.Name, entry, a, p.layout.unit, p.layout.unit)
		}
		o.Attach = append(o.Attach, f.abs(a))
	}
	return o, nil
}

// unitWorkspace is a unit's own workspace, ws, as the path of the
// directory it is now. One inside the workspace the other units share is
// opened beneath it without following a link: the units' models write
// there, and a link one of them made would otherwise make a host
// directory this unit's workspace.
func unitWorkspace(ws, shared string) (string, error) {
	real, err := filepath.EvalSymlinks(shared)
	if err != nil {
		return ws, nil // the run says what is wrong with it
	}
	rel, ok := resolve.Beneath(ws, real)
	if !ok || rel == "." {
		return ws, nil
	}
	d, err := artifacts.OpenDirBeneath(real, rel)
	if err != nil {
		if errors.Is(err, artifacts.ErrOutsideDir) {
			return "", fmt.Errorf("is inside the shared workspace %s and goes through a symbolic link there, which a model may have made: give a directory", real)
		}
		return ws, nil // missing, or not a directory: the run says so
	}
	defer d.Close()
	// The directory opened, by the path it has now.
	return filepath.EvalSymlinks(artifacts.DirPath(d))
}

// mayAttach says whether a path filled in from earlier phases (their
// answers are model output) names a file of the workspace or the answer
// file of a phase this one needs (data's answerFile): not another file of
// the pipeline's directory, which holds the runs of phases it does not
// need. The run then reads a file of the workspace without following a
// link (resolve.Attachments).
func (p *pipe) mayAttach(path, workspace string, data map[string]any) bool {
	if ws, err := resolve.Workspace(p.file.abs(workspace)); err == nil {
		if _, ok := resolve.Beneath(path, ws); ok {
			return true
		}
	}
	phases, _ := data["phases"].(map[string]any)
	for _, v := range phases {
		if fields, ok := v.(map[string]any); ok {
			if af, _ := fields["answerFile"].(string); af != "" && filepath.Clean(af) == filepath.Clean(path) {
				return true
			}
		}
	}
	return false
}

// snapshot scans the roots every unit shares, once, so that a batch of a
// thousand tasks reads each skill file once rather than a thousand times.
// Each run still takes and records its own snapshot: files whose inode,
// size and modification and change times (nanoseconds) are unchanged keep
// this scan's digest; any other file is read again. Nil when there are no
// roots or they cannot be scanned (each run then reports why).
func (p *pipe) snapshot(ctx context.Context) *skills.Registry {
	d, _ := p.settings()
	if len(d.SkillsRoot)+len(d.ExternalSkillsRoot) == 0 {
		return nil
	}
	ws := p.file.Dir
	if d.Workspace != "" {
		ws = d.Workspace
	}
	if p.manifest.Workspace != "" {
		ws = p.manifest.Workspace
	}
	ws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil
	}
	roots, err := resolve.ExpandAutoRoots(ws, slices.Clone(d.SkillsRoot))
	if err != nil {
		return nil
	}
	roots = append(roots, d.ExternalSkillsRoot...)
	for i, r := range roots {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			roots[i] = real
		}
	}
	scan := skills.ScanOptions{Roots: roots, Workspace: ws, SandboxWorkspace: workspace.DefaultSandbox}
	if p.common.SnapshotCache != "" {
		scan.Cache, _ = skills.OpenSnapshotCache(p.common.SnapshotCache, scan)
	}
	reg, err := skills.Scan(ctx, scan)
	if err != nil {
		return nil
	}
	return reg
}

// rootPath keeps "auto" as it is; every other root is a path.
func rootPath(f *File, r string) string {
	if r == resolve.AutoRoot {
		return r
	}
	return f.abs(r)
}

// dependsOnPhases says whether what t filled in from data (rendered)
// depends on the earlier phases' output: filled in again with no phase
// in data, it fails or differs. It is judged on the output, not on how
// the template is spelled: `index . "phases"`, a range over the data or
// a name built by printf reach the phases as well as `.phases` does.
func dependsOnPhases(t *template.Template, data map[string]any, rendered string) bool {
	if _, ok := data["phases"]; !ok {
		return false
	}
	without := maps.Clone(data)
	without["phases"] = map[string]any{}
	again, err := render(t, without)
	return err != nil || again != rendered
}

func render(t *template.Template, data map[string]any) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func firstOf(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// syncWriter serialises whole writes from phases that run at once.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// prefixWriter writes whole lines, each with a prefix, so that phases
// running at once do not interleave inside a line.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func newPrefixWriter(w io.Writer, prefix string) *prefixWriter {
	return &prefixWriter{w: w, prefix: prefix}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := p.prefix + string(p.buf[:i+1])
		p.buf = p.buf[i+1:]
		if _, err := io.WriteString(p.w, line); err != nil {
			return len(b), err
		}
	}
}

// Flush writes a last line that has no newline.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		io.WriteString(p.w, p.prefix+strings.TrimRight(string(p.buf), "\n")+"\n")
		p.buf = nil
	}
}

// handedOff are the answer digests of ph's needs, read where the phases'
// outcomes are kept (never from a phase's own goroutine, while others
// finish).
func (p *pipe) handedOff(ph *Phase) map[string]artifacts.Digest {
	out := map[string]artifacts.Digest{}
	for _, n := range ph.Needs {
		if d := p.done[n]; d != nil {
			out[n] = d.outcome.AnswerDigest
		}
	}
	return out
}

// checkHandOff holds every answer file a phase is handed (its needs') to
// the digest recorded when it was written, right before the phase starts.
func (p *pipe) checkHandOff(handed map[string]artifacts.Digest) error {
	for _, n := range slices.Sorted(maps.Keys(handed)) {
		if err := p.checkAnswer(n, handed[n]); err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
