package forge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/store"
	"github.com/harness-dev/harness/workspace"
)

// Approval is how far a draft that passed goes without a person: promoted
// up to a tier, pending above it.
type Approval = store.Approval

// ParseApproval reads --approve-created: minimal, low, moderate or none.
func ParseApproval(s string) (Approval, error) { return store.ParseApproval("--approve-created", s) }

// Config is what a run gives the forge.
type Config struct {
	Store *store.Store
	// Root is the live root promoted skills go into.
	Root string
	// RunDir receives skill-forge.json and the drafts (skill-forge/),
	// outside every live root and out of the tools' reach.
	RunDir    string
	Redact    *artifacts.Redactor
	Approve   Approval
	Workspace *workspace.Workspace
	Sandbox   Sandbox
	// Registry is the run's snapshot: the names taken and the skills a
	// composed skill may order.
	Registry *skills.Registry
	// LearnedFrom is the run a reflection run studies: the history of
	// what it proposes names it.
	LearnedFrom string
	Now         func() time.Time
	// MinPassRate, when set, holds a draft that ships evals to them:
	// promoted only when with_skill's mean pass rate on the run's model,
	// run by EvalDraft, is at least this (and its tier allows); pending
	// with the numbers otherwise. Nil: drafts go by their tier alone.
	MinPassRate *float64
	EvalDraft   EvalDraft
	// OnStored is told of every draft the store took (promoted or
	// pending) before the model is: the run journals it.
	OnStored func(record.SkillCreated) error
}

// Forge runs create_skill and compose_skills for one run.
type Forge struct {
	cfg Config

	mu       sync.Mutex
	attempts map[string]int
	rec      record.SkillForge
}

// New starts a forge; a resumed run continues its attempt counts from
// the skill-forge.json it already has.
func New(cfg Config) (*Forge, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &Forge{cfg: cfg, attempts: map[string]int{},
		rec: record.SkillForge{Envelope: artifacts.NewEnvelope(record.TypeSkillForge, record.SkillForgeVersion), Attempts: []record.ForgeAttempt{}}}
	err := artifacts.ReadJSON(filepath.Join(cfg.RunDir, record.FileSkillForge), record.TypeSkillForge, record.SkillForgeVersion, &f.rec)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, a := range f.rec.Attempts {
		f.attempts[a.Skill] = max(f.attempts[a.Skill], a.Attempt)
	}
	return f, nil
}

// Call is the tool call a draft came from.
type Call struct {
	Tool   string
	CallID string
	Turn   int
	RunID  string
}

// Step is one part of a composed skill.
type Step struct {
	Skill       string `json:"skill"`
	Instruction string `json:"instruction"`
}

// Create takes a draft through validation, scan, tests and approval. The
// attempt is recorded whatever happens; an error is only returned when
// harness itself failed (the store, the disk).
func (f *Forge) Create(ctx context.Context, call Call, d Draft) (record.ForgeAttempt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := record.ForgeAttempt{Skill: d.Name, Tool: call.Tool, CallID: call.CallID, Turn: call.Turn, Time: f.cfg.Now().UTC(),
		Findings: []record.Finding{}, Diagnostics: []string{}, Tests: []record.ForgeTestResult{}, Composes: d.Composes}
	err := f.create(ctx, call, d, &a)
	f.rec.Attempts = append(f.rec.Attempts, a)
	if werr := f.cfg.Redact.WriteJSON(filepath.Join(f.cfg.RunDir, record.FileSkillForge), &f.rec); werr != nil && err == nil {
		err = werr
	}
	return a, err
}

func (f *Forge) create(ctx context.Context, call Call, d Draft, a *record.ForgeAttempt) error {
	refuse := func(msgs ...string) error {
		a.Outcome, a.Diagnostics = record.ForgeRefused, append(a.Diagnostics, msgs...)
		return nil
	}
	if skills.ValidName(d.Name) {
		f.attempts[d.Name]++
		a.Attempt = f.attempts[d.Name]
		if a.Attempt > record.MaxSkillForgeAttempt {
			return refuse(fmt.Sprintf("%s has had %d attempts in this run, the most allowed; nothing was written", d.Name, record.MaxSkillForgeAttempt))
		}
	}
	if errs := d.check(); len(errs) > 0 {
		return refuse(errs...)
	}
	if msg := f.nameTaken(d.Name); msg != "" {
		return refuse(msg)
	}
	actor := record.Actor{Kind: "run", RunID: call.RunID, Turn: call.Turn, CallID: call.CallID, LearnedFrom: f.cfg.LearnedFrom}
	draftRel := filepath.Join(record.DirSkillForgeDrafts, d.Name, fmt.Sprintf("attempt-%d", a.Attempt))
	attemptDir := filepath.Join(f.cfg.RunDir, draftRel)
	os.RemoveAll(attemptDir) // a resumed run may have left a partial one
	skillDir, err := d.write(attemptDir)
	if err != nil {
		return refuse(fmt.Sprintf("the draft could not be written: %v", err))
	}
	a.Draft = filepath.Join(draftRel, d.Name)
	if err := f.cfg.Store.Audit(record.SkillCreatedDraft, record.SkillAuditEvent{Skill: d.Name, Actor: actor, Detail: fmt.Sprintf("attempt %d", a.Attempt)}); err != nil {
		return err
	}
	// Validation: the strict rules every installed skill meets, and a
	// manifest that parses.
	val, err := skills.Validate(ctx, skillDir, skills.ValidateOptions{Strict: true})
	if err != nil {
		return err
	}
	for _, s := range val.Skills {
		for _, dg := range append(slices.Clone(val.Diagnostics), s.Diagnostics...) {
			if dg.Severity == skills.SeverityError {
				a.Diagnostics = append(a.Diagnostics, fmt.Sprintf("%s: %s", dg.Code, dg.Detail))
			}
		}
	}
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{attemptDir}})
	if err != nil {
		return err
	}
	s, ok := reg.Lookup(d.Name)
	if !ok && len(a.Diagnostics) == 0 {
		a.Diagnostics = append(a.Diagnostics, "the draft does not load as a skill")
	}
	if ok {
		a.SkillDigest = s.Digest
		as := audit.Assess(s)
		a.Findings, a.Risk = as.Findings, as.Risk.String()
		if as.PermissionsError != "" {
			a.Diagnostics = append(a.Diagnostics, as.PermissionsError)
		}
	}
	if len(a.Diagnostics) > 0 {
		a.Outcome = record.ForgeInvalid
		return nil
	}
	tests, err := runTests(ctx, f.cfg.Sandbox, f.cfg.Workspace, s, skillDir, d.Tests)
	if err != nil {
		a.Outcome, a.Diagnostics = record.ForgeTestsFailed, append(a.Diagnostics, err.Error())
		return nil
	}
	a.Tests = tests
	passed := 0
	for _, t := range tests {
		if t.Passed {
			passed++
		}
	}
	if err := f.cfg.Store.Audit(record.SkillTested, record.SkillAuditEvent{Skill: d.Name, Actor: actor, Risk: a.Risk,
		Detail: fmt.Sprintf("attempt %d: %d of %d tests passed", a.Attempt, passed, len(tests))}); err != nil {
		return err
	}
	if passed < len(tests) {
		a.Outcome = record.ForgeTestsFailed
		return nil
	}
	risk, _ := skills.ParseRisk(a.Risk)
	pending := !f.cfg.Approve.Auto(risk)
	if f.cfg.MinPassRate != nil && d.shipsEvals() {
		// The evals run after the tests: a draft whose own scripts fail
		// is not worth a model's time.
		a.Eval = f.evalGate(ctx, skillDir, attemptDir, fmt.Sprintf("%s-attempt-%d", d.Name, a.Attempt))
		pending = pending || !a.Eval.Met
	}
	v, err := f.cfg.Store.Put(ctx, store.PutRequest{Name: d.Name, Dir: skillDir, Root: f.cfg.Root, Actor: actor, Risk: risk,
		Findings: a.Findings, Source: call.Tool, Pending: pending, Event: record.SkillPromoted, Eval: a.Eval})
	if err != nil {
		return err
	}
	a.Version = v.Version
	a.Outcome = record.ForgePromoted
	if pending {
		a.Outcome = record.ForgePending
	}
	if f.cfg.OnStored != nil {
		return f.cfg.OnStored(record.SkillCreated{Skill: d.Name, Version: v.Version, Root: f.cfg.Root, Outcome: a.Outcome, CallID: call.CallID})
	}
	return nil
}

// nameTaken refuses a name that belongs to a skill the forge did not
// make: a model may improve its own skills, never replace the operator's.
func (f *Forge) nameTaken(name string) string {
	h, err := f.cfg.Store.History(name)
	if err != nil {
		return err.Error()
	}
	madeByRun := false
	for _, v := range h.Versions {
		madeByRun = v.MadeBy.Kind == "run"
	}
	if f.cfg.Registry != nil {
		if _, ok := f.cfg.Registry.Lookup(name); ok && !madeByRun {
			return fmt.Sprintf("a skill named %s already exists and was not made by SkillForge: choose another name", name)
		}
	}
	if len(h.Versions) > 0 && !madeByRun {
		return fmt.Sprintf("the skill store already keeps %s, installed by an operator: choose another name", name)
	}
	if _, err := os.Lstat(filepath.Join(f.cfg.Root, name)); err == nil && len(h.Versions) == 0 {
		return fmt.Sprintf("%s already exists in %s: choose another name", name, f.cfg.Root)
	}
	return ""
}

// Compose writes a skill whose body orders existing skills; its parts
// must be in the run's snapshot and no part may lead back to it.
func (f *Forge) Compose(ctx context.Context, call Call, name, description string, steps []Step) (record.ForgeAttempt, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nThis skill is a sequence of other skills. Activate each when you reach its step.\n\n", name)
	var parts []string
	var problems []string
	for i, st := range steps {
		fmt.Fprintf(&b, "%d. Use the skill `%s`: %s\n", i+1, st.Skill, strings.TrimSpace(st.Instruction))
		if !slices.Contains(parts, st.Skill) {
			parts = append(parts, st.Skill)
		}
	}
	if len(steps) == 0 {
		problems = append(problems, "steps is empty: a composed skill orders at least one skill")
	}
	for _, p := range parts {
		if p == name {
			problems = append(problems, fmt.Sprintf("%s cannot compose itself", name))
			continue
		}
		if f.cfg.Registry == nil {
			problems = append(problems, "this run has no skill registry")
			break
		}
		if _, ok := f.cfg.Registry.Lookup(p); !ok {
			problems = append(problems, fmt.Sprintf("%s is not a skill of this run's snapshot", p))
		} else if cycle := cycleThrough(f.cfg.Registry, p, name, nil); cycle != nil {
			problems = append(problems, fmt.Sprintf("composing %s would make a cycle: %s", p, strings.Join(cycle, " -> ")))
		}
	}
	// A composed skill runs no code of its own: its parts run theirs
	// under their own manifests.
	d := Draft{Name: name, Description: description, Body: b.String(), Composes: parts, Permissions: map[string]any{}}
	if len(problems) > 0 {
		f.mu.Lock()
		defer f.mu.Unlock()
		a := record.ForgeAttempt{Skill: name, Tool: call.Tool, CallID: call.CallID, Turn: call.Turn, Time: f.cfg.Now().UTC(),
			Outcome: record.ForgeRefused, Findings: []record.Finding{}, Diagnostics: problems, Tests: []record.ForgeTestResult{}, Composes: parts}
		f.rec.Attempts = append(f.rec.Attempts, a)
		return a, f.cfg.Redact.WriteJSON(filepath.Join(f.cfg.RunDir, record.FileSkillForge), &f.rec)
	}
	return f.Create(ctx, call, d)
}

// Composes reads metadata.harness.composes of a skill.
func Composes(s *skills.Skill) []string {
	meta, _ := s.Frontmatter["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	list, _ := h["composes"].([]any)
	var out []string
	for _, v := range list {
		if n, ok := v.(string); ok {
			out = append(out, n)
		}
	}
	return out
}

// cycleThrough reports a path from part back to target through composed
// skills, or nil.
func cycleThrough(reg *skills.Registry, part, target string, seen []string) []string {
	if slices.Contains(seen, part) {
		return nil
	}
	path := append(slices.Clone(seen), part)
	s, ok := reg.Lookup(part)
	if !ok {
		return nil
	}
	for _, next := range Composes(s) {
		if next == target {
			return append([]string{target}, append(path, target)...)
		}
		if c := cycleThrough(reg, next, target, path); c != nil {
			return c
		}
	}
	return nil
}
