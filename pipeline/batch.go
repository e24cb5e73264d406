package pipeline

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/yamlsafe"
)

// BatchSchema is the JSON Schema of a batch file (batch.schema.json).
//
//go:embed batch.schema.json
var BatchSchema []byte

// Task is one task as a batch file (or its tasks-file) declares it: an id,
// its vars, and any of the fields of `task:` to override.
type Task struct {
	ID   string         `json:"id,omitempty"`
	Vars map[string]any `json:"vars,omitempty"`
	Phase
}

// BatchOptions configure a new batch.
type BatchOptions struct {
	Options
	// Matrix adds or replaces matrix entries (--matrix NAME=A,B).
	Matrix map[string][]string
	// Shard is "I/N": run only the tasks whose id digest is I mod N.
	Shard string
	// OrResume resumes the batch directory when it already exists (a
	// retried pod of an Indexed Job) instead of refusing it; needs ID.
	OrResume bool
}

// Shard is one of N slices of a batch's tasks, chosen by the digest of
// each task id: stable across machines and file orderings.
type Shard struct{ Index, Count int }

// ParseShard reads "I/N".
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || b < 1 || a < 0 || a >= b {
		return Shard{}, outcome.Usage("shard_invalid", "--shard %q: give I/N with 0 <= I < N, e.g. 0/3", s)
	}
	return Shard{a, b}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Has reports whether the task id belongs to this shard.
func (s Shard) Has(id string) bool {
	if s.Count <= 1 {
		return true
	}
	d := artifacts.DigestString(id)
	hexPart := strings.TrimPrefix(string(d), "blake3:")
	var b [8]byte
	for i := range b {
		v, _ := strconv.ParseUint(hexPart[2*i:2*i+2], 16, 8)
		b[i] = byte(v)
	}
	return binary.BigEndian.Uint64(b[:])%uint64(s.Count) == uint64(s.Index)
}

var idUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// LoadBatch reads a batch file into a File whose phases are the tasks
// (without needs), in file order; it also returns every task id before
// sharding, for merging shards later.
func LoadBatch(path string, vars map[string]string, matrix map[string][]string, shard Shard) (*File, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, outcome.Usage("batch_file_invalid", "%s: %v", path, err)
	}
	data, err := readBounded(abs)
	if err != nil {
		return nil, nil, outcome.Usage("batch_file_invalid", "batch file %s: %v", path, err)
	}
	var raw struct {
		Defaults  Defaults         `json:"defaults"`
		Task      Phase            `json:"task"`
		Vars      map[string]any   `json:"vars"`
		Matrix    map[string][]any `json:"matrix"`
		Tasks     []Task           `json:"tasks"`
		TasksFile string           `json:"tasks-file"`
	}
	var astFile *ast.File
	if strings.HasSuffix(abs, ".jsonl") {
		// A bare JSONL file: every task says all it needs.
		raw.TasksFile = abs
	}
	var mismatch *schemaMismatch
	if astFile == nil && raw.TasksFile != abs {
		if astFile, err = decodeChecked(data, path, docschema.Embedded("batch.schema.json", BatchSchema, ""), "pipeline/batch.schema.json", &raw); err != nil && !errors.As(err, &mismatch) {
			return nil, nil, err
		}
	}
	f := &File{Path: abs, Dir: filepath.Dir(abs), Defaults: raw.Defaults, Vars: map[string]string{}, ast: astFile, unit: "task", mismatch: mismatch}
	h := artifacts.NewHasher()
	h.WriteField(string(artifacts.DigestBytes(data)))
	for k, v := range raw.Vars {
		f.Vars[k] = fmt.Sprint(v)
	}
	for k, v := range vars {
		f.Vars[k] = v
	}
	tasks := raw.Tasks
	for i := range tasks {
		tasks[i].line = yamlsafe.LineOf(astFile, []string{"tasks", strconv.Itoa(i)})
	}
	if raw.TasksFile != "" {
		more, digest, err := readTasksFile(f.abs(raw.TasksFile), path)
		if err != nil {
			return nil, nil, err
		}
		h.WriteField(string(digest))
		tasks = append(tasks, more...)
	}
	// The tasks file is part of what the batch is: drift covers it.
	f.Digest = h.Digest()
	combos := expand(raw.Matrix, matrix)
	if len(tasks) == 0 {
		tasks = []Task{{}}
	}
	var all []string
	for _, t := range tasks {
		for _, c := range combos {
			ph := merge(raw.Task, t)
			ph.vars = map[string]string{}
			for k, v := range t.Vars {
				ph.vars[k] = fmt.Sprint(v)
			}
			var parts []string
			for _, kv := range c {
				ph.vars[kv[0]] = kv[1]
				parts = append(parts, kv[0]+"-"+kv[1])
			}
			ph.Name = taskID(t, ph, parts)
			all = append(all, ph.Name)
			if shard.Has(ph.Name) {
				f.Phases = append(f.Phases, ph)
			}
		}
	}
	for i := range f.Phases {
		f.Phases[i].index = i
	}
	if err := f.check(path); err != nil {
		return nil, nil, err
	}
	return f, all, nil
}

// loadBatchFor reloads the batch a directory recorded, with its command
// line's vars, matrix and shard.
func loadBatchFor(m record.PipelineManifest) (*File, error) {
	sh := Shard{0, 1}
	if m.Shard != "" {
		var err error
		if sh, err = ParseShard(m.Shard); err != nil {
			return nil, err
		}
	}
	f, _, err := LoadBatch(m.File, m.VarOverrides, m.MatrixOverrides, sh)
	return f, err
}

// readTasksFile reads JSONL tasks, one object per line (blank lines and
// lines starting with # are skipped).
func readTasksFile(path, batchFile string) ([]Task, artifacts.Digest, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, "", outcome.Usage("batch_file_invalid", "%s: tasks-file %s: %v", batchFile, path, err)
	}
	var out []Task
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxFile)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var t Task
		if err := dec.Decode(&t); err != nil {
			return nil, "", outcome.Usage("batch_file_invalid", "%s:%d: not a task object: %v", path, n, err)
		}
		t.line = n
		out = append(out, t)
	}
	return out, artifacts.DigestBytes(data), sc.Err()
}

// expand is the matrix's combinations, each a list of (name, value) in
// name order; one empty combination when there is no matrix.
func expand(file map[string][]any, flags map[string][]string) [][][2]string {
	m := map[string][]string{}
	for k, vs := range file {
		for _, v := range vs {
			m[k] = append(m[k], fmt.Sprint(v))
		}
	}
	for k, vs := range flags {
		m[k] = vs
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	combos := [][][2]string{{}}
	for _, k := range names {
		var next [][][2]string
		for _, c := range combos {
			for _, v := range m[k] {
				next = append(next, append(slices.Clone(c), [2]string{k, v}))
			}
		}
		combos = next
	}
	return combos
}

// merge lays a task's own fields over the batch's `task:` fields.
func merge(base Phase, t Task) Phase {
	p := base
	o := t.Phase
	if o.Prompt != "" || o.PromptFile != "" {
		p.Prompt, p.PromptFile = o.Prompt, o.PromptFile
	}
	for _, f := range []struct{ dst, src *[]string }{
		{&p.Skills, &o.Skills}, {&p.AllowTools, &o.AllowTools}, {&p.AllowSkillScripts, &o.AllowSkillScripts}, {&p.AllowNetwork, &o.AllowNetwork}, {&p.AllowCommands, &o.AllowCommands}, {&p.ConfirmTools, &o.ConfirmTools}, {&p.Attach, &o.Attach},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	p.OutputSchema = firstOf(o.OutputSchema, p.OutputSchema)
	p.Model = firstOf(o.Model, p.Model)
	p.PromptRole = firstOf(o.PromptRole, p.PromptRole)
	p.Timeout = firstOf(o.Timeout, p.Timeout)
	p.Workspace = firstOf(o.Workspace, p.Workspace)
	if o.ExternalSkillsRoot != nil {
		p.ExternalSkillsRoot = o.ExternalSkillsRoot
	}
	if o.MaxTurns != nil {
		p.MaxTurns = o.MaxTurns
	}
	if o.MaxTokens > 0 {
		p.MaxTokens = o.MaxTokens
	}
	p.line = t.line
	return p
}

// taskID is the task's own id, with its matrix combination appended, or
// one derived from what the task is: stable whatever the file order.
func taskID(t Task, p Phase, combo []string) string {
	base := t.ID
	if base == "" {
		decl, _ := json.Marshal(struct {
			T Task              `json:"t"`
			V map[string]string `json:"v"`
		}{t, p.vars})
		base = "t" + strings.TrimPrefix(string(artifacts.DigestBytes(decl)), "blake3:")[:10]
		if len(combo) > 0 && len(t.Vars) == 0 && t.Prompt == "" && t.PromptFile == "" {
			base = ""
		}
	}
	parts := append([]string{base}, combo...)
	id := strings.Trim(idUnsafe.ReplaceAllString(strings.ToLower(strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "_")), "-"), "-._")
	if len(id) > 128 {
		id = id[:117] + "-" + strings.TrimPrefix(string(artifacts.DigestString(id)), "blake3:")[:10]
	}
	if id == "" {
		id = "task"
	}
	return id
}

// RunBatch runs a batch file's tasks (this shard's), up to Jobs at a time.
func RunBatch(ctx context.Context, o BatchOptions) (*record.PipelineResult, error) {
	sh := Shard{0, 1}
	if o.Shard != "" {
		var err error
		if sh, err = ParseShard(o.Shard); err != nil {
			return nil, err
		}
	}
	f, all, err := LoadBatch(o.File, o.Vars, o.Matrix, sh)
	if err != nil {
		return nil, err
	}
	if len(f.Phases) == 0 && sh.Count > 1 {
		fmt.Fprintf(orDiscard(o.Stderr), "harness: shard %s of %d tasks holds none of them\n", sh, len(all))
	}
	if sh.Count > 1 && o.ID != "" {
		// Shards of one batch share its id; each has its own directory.
		o.ID = shardID(o.ID, sh)
	}
	if o.OrResume && o.ID != "" {
		base := o.ArtifactsDir
		if base == "" {
			base = DefaultBatchDir
		}
		dir := filepath.Join(base, o.ID)
		if _, err := os.Stat(filepath.Join(dir, record.FileBatch)); err == nil {
			return Resume(ctx, ResumeOptions{Dir: dir, BaseURL: o.BaseURL, Common: o.Common})
		}
	}
	return start(ctx, f, batchLayout, o.Options, func(m *record.PipelineManifest) {
		m.AllTasks, m.MatrixOverrides = all, o.Matrix
		if sh.Count > 1 {
			m.Shard = sh.String()
		}
	})
}

// ShardFromEnv is the shard a Kubernetes Indexed Job's pod runs:
// JOB_COMPLETION_INDEX of count ("" when the index is not set).
func ShardFromEnv(count int) (string, error) {
	idx := os.Getenv("JOB_COMPLETION_INDEX")
	if idx == "" {
		return "", nil
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || count < 1 || i >= count {
		return "", outcome.Usage("shard_invalid", "JOB_COMPLETION_INDEX=%q does not name one of %d shards", idx, count)
	}
	return Shard{i, count}.String(), nil
}
