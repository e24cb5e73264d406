package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/grader"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/scorecard"
	"github.com/harness-dev/harness/store"
)

// DefaultDir is where eval directories go by default.
const DefaultDir = ".harness/evals"

// DefaultEpochs is how many times each cell runs when not told.
const DefaultEpochs = 3

// Options configure an eval.
type Options struct {
	Suite LoadOptions
	// Baseline is an older version of the skill run as old_skill beside
	// the others: a directory, or a version kept in Store ("" = none).
	Baseline string
	Store    string
	// Models are the models every configuration runs on ("" entries are
	// refused; none = the settings' model).
	Models []string
	Epochs int
	// NoWithout leaves out without_skill (with_skill against old_skill
	// only).
	NoWithout bool
	// ArtifactsDir holds eval directories; ID names this one.
	ArtifactsDir string
	ID           string
	Jobs         int
	Shard        string
	// OrResume resumes the eval directory when it already exists (a
	// retried pod of an Indexed Job) instead of refusing it; needs ID.
	OrResume bool
	// Settings and BaseURL are every cell's run settings, as for a batch.
	Settings pipeline.Layer
	BaseURL  string
	// Record and Replay are cassette directories for the cells' runs
	// (<dir>/<cell>.jsonl) and the grader's (<dir>/grader/<cell>.jsonl).
	Record, Replay string
	// AllowTools and AllowCommands are given to every cell; a command
	// check runs through the same run_command rules.
	AllowTools    []string
	AllowCommands []string
	CommandGrant  string
	Commands      *CommandEnv
	// Grader grades expectations in words (nil: they stay ungraded);
	// GraderBaseURL is its endpoint, recorded for a resume.
	Grader        GraderFactory
	GraderBaseURL string
	Gate          scorecard.GateOptions
	// MaxCells, when set, refuses an eval of more cells than this before
	// anything runs: what bounds the model calls of evals a model wrote
	// itself (a SkillForge draft's).
	MaxCells int
	Common   pipeline.Common
}

// GraderFactory gives the grader a cell uses: its model wrapped for
// recording or replay of that cell, or an error when it cannot be had.
type GraderFactory interface {
	ForCell(cell string) (*grader.Grader, error)
	Name() string
}

// Run starts an eval: its directory, its cells as one batch, the grading
// of each cell, the numbers and the gate.
func Run(ctx context.Context, o Options) (*record.EvalResult, error) {
	suite, err := Load(o.Suite)
	if err != nil {
		return nil, err
	}
	if o.Epochs == 0 {
		o.Epochs = DefaultEpochs
	}
	if o.Epochs < 1 || o.Epochs > 100 {
		return nil, outcome.Usage("eval_epochs_invalid", "--epochs %d: give 1 to 100", o.Epochs)
	}
	models := slices.Clone(o.Models)
	if len(models) == 0 {
		models = []string{o.Settings.Settings.Model}
	}
	for _, m := range models {
		if m == "" {
			return nil, outcome.Usage("model_missing", "no model: pass --model NAME (repeat it to compare models), or set HARNESS_MODEL")
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(models)))) != len(models) {
		return nil, outcome.Usage("eval_models_invalid", "--model names a model twice")
	}
	if n := cellCount(suite, o, len(models)); o.MaxCells > 0 && n > o.MaxCells {
		return nil, outcome.Usage("eval_too_large", "%s makes %d cells (each eval with and without the skill, each trigger query, on every model and epoch): at most %d here", firstNonEmpty(suite.File, suite.SkillDir), n, o.MaxCells)
	}
	if f := o.Gate.NoRegressionFrom; f != "" {
		// Checked before any cell runs and is paid for; read again at
		// the end, when the numbers are compared.
		if _, err := ReadResult(f, o.Common.RunKey, record.EvalManifest{EvalDigest: suite.Digest, Skill: suite.SkillName}); err != nil {
			return nil, err
		}
	}
	if o.OrResume && o.ID != "" {
		if dir, ok := existingEvalDir(o); ok {
			if err := sameEval(ctx, dir, o, suite, models); err != nil {
				return nil, err
			}
			return Resume(ctx, ResumeOptions{Dir: dir, BaseURL: o.BaseURL, Common: o.Common,
				Grader:   func(record.EvalManifest) GraderFactory { return o.Grader },
				Commands: func(record.EvalManifest) *CommandEnv { return o.Commands }})
		}
	}
	dir, err := newEvalDir(o)
	if err != nil {
		return nil, err
	}
	e := &evalRun{dir: dir, opts: o, suite: suite, now: o.Common.Now}
	if e.now == nil {
		e.now = time.Now
	}
	if err := e.prepare(ctx, models); err != nil {
		// The directory is this call's own and holds nothing yet that a
		// reader could take for an eval: it goes, and the id is free.
		if e.journal != nil {
			e.journal.Close()
		}
		os.RemoveAll(dir)
		return nil, err
	}
	defer e.journal.Close()
	return e.execute(ctx, false)
}

// cellCount is how many cells plan will make of suite.
func cellCount(s *Suite, o Options, models int) int {
	configs := 1
	if !o.NoWithout {
		configs++
	}
	if o.Baseline != "" {
		configs++
	}
	return (len(s.Evals)*configs + len(s.Triggers)) * models * o.Epochs
}

// sameEval refuses to resume, for --or-resume, a directory that holds
// another eval than the one asked: another skill or version of it, other
// evals, models, epochs, configurations, grader or gate.
func sameEval(ctx context.Context, dir string, o Options, suite *Suite, models []string) error {
	v, err := Verify(dir, o.Common.RunKey)
	if err != nil {
		return err
	}
	m := v.Manifest
	tmp, err := os.MkdirTemp("", "harness-eval-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	_, digest, err := copySkill(ctx, suite.SkillDir, tmp)
	if err != nil {
		return err
	}
	var why string
	gate := record.EvalGate{MinPassRate: o.Gate.MinPassRate, MinDelta: o.Gate.MinDelta, NoRegressionFrom: o.Gate.NoRegressionFrom}
	grader := ""
	if o.Grader != nil {
		grader = o.Grader.Name()
	}
	switch {
	case digest != m.SkillDigest:
		why = "the skill is not the version it evaluated"
	case suite.Digest != m.EvalDigest || suite.TriggersDigest != m.TriggersDigest:
		why = "its eval file differs"
	case !slices.Equal(models, m.Models) || o.Epochs != m.Epochs:
		why = "its models or epochs differ"
	case grader != m.GraderModel:
		why = "its grader differs"
	case o.Baseline != m.Baseline || o.NoWithout != !slices.Contains(m.Configurations, record.ConfigWithoutSkill):
		why = "its configurations differ"
	case !sameGate(gate, m.Gate):
		why = "its gate differs"
	case settingsDigest(o) != m.SettingsDigest:
		why = "its run settings or tools differ"
	}
	if why != "" {
		return outcome.Usage("eval_exists", "--or-resume: %s holds another eval (%s): pass another --id, or the same flags", dir, why)
	}
	return nil
}

// settingsDigest is what every cell is run with beyond the eval file:
// tools, commands, the run settings. Not the endpoint: shards on other
// machines may reach the same model another way.
func settingsDigest(o Options) artifacts.Digest {
	b, _ := json.Marshal(map[string]any{"settings": o.Settings.Settings, "allowTools": o.AllowTools, "allowCommands": o.AllowCommands,
		"commandGrant": o.CommandGrant})
	return artifacts.DigestBytes(b)
}

func sameGate(a, b record.EvalGate) bool {
	eq := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.MinPassRate, b.MinPassRate) && eq(a.MinDelta, b.MinDelta) && a.NoRegressionFrom == b.NoRegressionFrom
}

// existingEvalDir is the directory --id (and --shard) name when it holds
// an eval already.
func existingEvalDir(o Options) (string, bool) {
	id, err := shardDir(o.ID, o.Shard)
	if err != nil {
		return "", false
	}
	dir := filepath.Join(firstNonEmpty(o.ArtifactsDir, DefaultDir), id)
	_, err = os.Stat(filepath.Join(dir, record.FileEval))
	return dir, err == nil
}

// shardDir is the directory name of one shard of what id names: id
// itself when there are no shards, id-shard-I for shard I/N.
func shardDir(id, shard string) (string, error) {
	if shard == "" {
		return id, nil
	}
	sh, err := pipeline.ParseShard(shard)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-shard-%d", id, sh.Index), nil
}

func newEvalDir(o Options) (string, error) {
	id := o.ID
	if id == "" {
		id = rundir.NewRunID(time.Now())
	}
	if o.ID != "" {
		// Shards of one eval share its id; each has its own directory.
		var err error
		if id, err = shardDir(id, o.Shard); err != nil {
			return "", err
		}
	}
	if err := rundir.CheckRunID(id); err != nil {
		return "", outcome.Usage("eval_id_invalid", "--id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	base := firstNonEmpty(o.ArtifactsDir, DefaultDir)
	base, err := filepath.Abs(base)
	if err != nil {
		return "", outcome.Usage("artifacts_dir_invalid", "--artifacts-dir: %v", err)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", outcome.Usage("artifacts_dir_invalid", "--artifacts-dir %s: %v", base, err)
	}
	dir := filepath.Join(base, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", outcome.Usage("eval_exists", "eval directory %s already exists: resume it with `harness eval resume %s`, or pass another --id", dir, dir)
		}
		return "", outcome.Usage("artifacts_dir_invalid", "create %s: %v", dir, err)
	}
	return dir, nil
}

// evalRun is one execution (a start or a resume) of an eval directory.
type evalRun struct {
	dir      string
	opts     Options
	suite    *Suite
	manifest record.EvalManifest
	journal  *artifacts.Journal
	now      func() time.Time
	// graded are the cells graded so far, by id, with the digest of their
	// grading file.
	graded    map[string]artifacts.Digest
	gradedRun map[string][2]string
	// ended is each cell's workspace digest as its run ended.
	ended map[string]artifacts.Digest
}

// prepare writes what the eval is (eval.json), the skill roots of each
// configuration, each cell's workspace and the batch file, and opens the
// journal.
func (e *evalRun) prepare(ctx context.Context, models []string) error {
	s := e.suite
	name, digest, err := copySkill(ctx, s.SkillDir, filepath.Join(e.dir, record.DirEvalRoots, record.ConfigWithSkill))
	if err != nil {
		return err
	}
	if s.SkillName != "" && s.SkillName != name {
		return outcome.Usage("eval_skill_mismatch", "%s says skill_name %q, but the skill in %s is named %q: correct one of them", s.File, s.SkillName, s.SkillDir, name)
	}
	s.SkillName = name
	configs := []string{record.ConfigWithSkill}
	if !e.opts.NoWithout {
		configs = append(configs, record.ConfigWithoutSkill)
		if err := os.MkdirAll(filepath.Join(e.dir, record.DirEvalRoots, record.ConfigWithoutSkill), 0o755); err != nil {
			return err
		}
	}
	m := record.EvalManifest{Envelope: artifacts.NewEnvelope(record.TypeEval, record.EvalVersion), EvalID: filepath.Base(e.dir), Skill: name,
		SkillDir: s.SkillDir, SkillDigest: digest, EvalFile: s.File, EvalDigest: s.Digest, TriggersFile: s.TriggersFile, TriggersDigest: s.TriggersDigest,
		Models: models, Epochs: e.opts.Epochs, Shard: e.opts.Shard, AllowCommands: e.opts.AllowCommands, CommandGrant: e.opts.CommandGrant,
		Gate: record.EvalGate{MinPassRate: e.opts.Gate.MinPassRate, MinDelta: e.opts.Gate.MinDelta, NoRegressionFrom: e.opts.Gate.NoRegressionFrom}}
	if e.opts.Baseline != "" {
		bname, bdigest, err := e.baseline(ctx, name)
		if err != nil {
			return err
		}
		if bname != name {
			return outcome.Usage("eval_baseline_invalid", "--baseline %s holds skill %q, not %q", e.opts.Baseline, bname, name)
		}
		m.Baseline, m.BaselineDigest = e.opts.Baseline, bdigest
		configs = append(configs, record.ConfigOldSkill)
	}
	if len(configs) < 2 && len(s.Evals) > 0 {
		return outcome.Usage("eval_configurations_invalid", "--no-without-skill leaves with_skill alone: give --baseline DIR to compare it with")
	}
	m.Configurations = configs
	if g := e.opts.Grader; g != nil {
		m.GraderModel, m.GraderPromptDigest = g.Name(), grader.PromptDigest()
		m.GraderBaseURL = artifacts.EndpointOf(e.opts.GraderBaseURL)
		st := e.opts.Settings.Settings
		gs := record.Settings{RequestTimeout: st.RequestTimeout, MaxRetries: st.MaxRetries, RetryMaxWait: st.RetryMaxWait, Stream: st.Stream}
		if !reflect.ValueOf(gs).IsZero() {
			m.GraderSettings = &gs
		}
	}
	m.SettingsDigest = settingsDigest(e.opts)
	m.Cells = plan(s, configs, models, e.opts.Epochs)
	if len(m.Cells) == 0 {
		return outcome.Usage("eval_file_invalid", "%s has no evals and no trigger queries", s.SkillDir)
	}
	seen := map[string]bool{}
	for _, c := range m.Cells {
		if seen[c.ID] {
			return outcome.Usage("eval_cells_invalid", "two cells would share the id %q (eval ids and model names that read the same once made safe for a file name): rename one", c.ID)
		}
		seen[c.ID] = true
		// Checked before any cell runs: a cell id the batch refuses would
		// stop the eval after the others were paid for.
		if err := rundir.CheckRunID(c.ID); err != nil {
			return outcome.Usage("eval_file_invalid", "eval %s makes the cell id %q, which cannot name a run: give the eval an id of letters, digits, '_' and '-'", c.EvalID, c.ID)
		}
	}
	for _, c := range m.Cells {
		ws := filepath.Join(e.dir, record.DirEvalCells, c.ID)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return err
		}
		if ev := s.eval(c.EvalID); ev != nil && c.Configuration != record.ConfigTrigger {
			if err := copyInputs(s.Base(), ev.Files, ws, e.dir); err != nil {
				return outcome.Usage("eval_file_invalid", "eval %s: %v", ev.ID, err)
			}
		}
	}
	e.manifest = m
	manifestDigest, err := e.redact().WriteJSONDigest(filepath.Join(e.dir, record.FileEval), &m)
	if err != nil {
		return err
	}
	batchDigest, err := e.writeBatch()
	if err != nil {
		return err
	}
	j, err := artifacts.OpenJournal(filepath.Join(e.dir, record.FileEvalJournal), 1)
	if err != nil {
		return err
	}
	j.SetClock(e.now)
	j.Continue("", e.opts.Common.RunKey)
	e.journal = j
	e.graded, e.gradedRun = map[string]artifacts.Digest{}, map[string][2]string{}
	_, err = j.Append(record.EventEvalStarted, map[string]any{"manifestDigest": manifestDigest, "batchFileDigest": batchDigest})
	return err
}

// baseline copies the old_skill version: a directory, or a version kept
// in the skill store (a digest or a unique prefix), whose tree must be
// that version.
func (e *evalRun) baseline(ctx context.Context, name string) (string, artifacts.Digest, error) {
	dst := filepath.Join(e.dir, record.DirEvalRoots, record.ConfigOldSkill)
	if st, err := os.Stat(e.opts.Baseline); err == nil && st.IsDir() {
		n, d, err := copySkill(ctx, e.opts.Baseline, dst)
		if err != nil {
			return "", "", fmt.Errorf("--baseline: %w", err)
		}
		return n, d, nil
	}
	st, err := store.Open(firstNonEmpty(e.opts.Store, store.DefaultStoreDir), e.opts.Common.RunKey)
	if err != nil {
		return "", "", outcome.Usage("eval_baseline_invalid", "--baseline %s is not a directory, and the skill store cannot be opened: %v", e.opts.Baseline, err)
	}
	v, tree, err := st.VersionTree(name, e.opts.Baseline)
	if err != nil {
		return "", "", outcome.Usage("eval_baseline_invalid", "--baseline %s is not a directory, nor a version of %s in the store: %v", e.opts.Baseline, name, outcome.As(err).Msg)
	}
	sk, err := copySkillVersion(ctx, tree, dst)
	if err != nil {
		return "", "", fmt.Errorf("--baseline: %w", err)
	}
	if sk.Version() != v {
		return "", "", outcome.Policy("eval_baseline_tampered", "the store's tree of %s %s is not that version (it reads as %s): the store was changed", name, v, sk.Version())
	}
	return sk.Name, sk.Version(), nil
}

func (s *Suite) eval(id string) *Eval {
	for i := range s.Evals {
		if s.Evals[i].ID == id {
			return &s.Evals[i]
		}
	}
	return nil
}

var cellUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// cellPart is an id or model name as a part of a cell id (a batch task
// id: lower-case letters, digits, '.', '_', '-'), with a digest when the
// plain form would lose something.
func cellPart(s string) string {
	p := strings.Trim(cellUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-._")
	if p != s || len(p) > 40 {
		if len(p) > 24 {
			p = p[:24]
		}
		p += "-" + strings.TrimPrefix(string(artifacts.DigestString(s)), "blake3:")[:8]
	}
	return p
}

// plan lists the cells: every eval in every configuration on every model
// for every epoch, then every trigger query on every model for every
// epoch. Ids are stable: they name what the cell is.
func plan(s *Suite, configs, models []string, epochs int) []record.EvalCell {
	var cells []record.EvalCell
	modelPart := func(m string) string {
		if len(models) == 1 {
			return ""
		}
		return "_" + cellPart(m)
	}
	for _, ev := range s.Evals {
		for _, c := range configs {
			for _, m := range models {
				for ep := 1; ep <= epochs; ep++ {
					cells = append(cells, record.EvalCell{ID: fmt.Sprintf("e%s_%s%s_%d", cellPart(ev.ID), c, modelPart(m), ep),
						EvalID: ev.ID, EvalName: ev.Name, Configuration: c, Model: m, Epoch: ep})
				}
			}
		}
	}
	for i, t := range s.Triggers {
		for _, m := range models {
			for ep := 1; ep <= epochs; ep++ {
				should := t.ShouldTrigger
				cells = append(cells, record.EvalCell{ID: fmt.Sprintf("q%d%s_%d", i+1, modelPart(m), ep),
					EvalID: "q" + strconv.Itoa(i+1), EvalName: t.Query, Configuration: record.ConfigTrigger, Model: m, Epoch: ep, ShouldTrigger: &should})
			}
		}
	}
	return cells
}
