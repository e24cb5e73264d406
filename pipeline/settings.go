package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/run"
	"github.com/harness-dev/harness/runopts"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Defaults are what every unit of a file shares: run settings spelled as
// the flags of `harness run`. Skills, tools and scripts are not among
// them: a unit gets only what it names.
type Defaults = record.Settings

// Layer is run settings the command line gives every unit (flags and
// HARNESS_* variables). A unit's own field wins over it, and it wins over
// the file's defaults.
type Layer struct {
	Settings record.Settings
	// Sources says where each setting came from ("flag", "env"), by key.
	Sources map[string]string
}

// settingsSchema checks a layer as the file's defaults are checked.
var settingsSchema = sync.OnceValue(func() *jsonschema.Schema {
	return docschema.Embedded("pipeline.schema.json", Schema, "#/$defs/defaults")
})

// check refuses a layer the file's defaults could not hold, naming each
// flag: the same rules, so a setting means the same wherever it is given.
func (l Layer) check() error {
	var probs []string
	b, _ := json.Marshal(l.Settings)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err == nil {
		err = settingsSchema().Validate(doc)
	}
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		for _, e := range docschema.Leaves(ve) {
			if len(e.InstanceLocation) > 0 {
				probs = append(probs, fmt.Sprintf("--%s: %s", e.InstanceLocation[0], docschema.Message(e)))
			}
		}
	}
	for _, p := range settingProblems(l.Settings) {
		probs = append(probs, fmt.Sprintf("--%s: %s", p.key, p.msg))
	}
	if len(probs) == 0 {
		return nil
	}
	slices.Sort(probs)
	return outcome.Usage("settings_invalid", "%s", strings.Join(slices.Compact(probs), "; "))
}

type settingProblem struct{ key, msg string }

// settingProblems are what a schema cannot say about settings: durations
// and sizes that must parse.
func settingProblems(s record.Settings) []settingProblem {
	var out []settingProblem
	for key, v := range map[string]string{"timeout": s.Timeout, "request-timeout": s.RequestTimeout, "retry-max-wait": s.RetryMaxWait} {
		if v == "" {
			continue
		}
		if _, err := time.ParseDuration(v); err != nil {
			out = append(out, settingProblem{key, fmt.Sprintf("%q is not a duration such as 90s or 10m", v)})
		}
	}
	for key, least := range map[string]uint64{"script-memory-limit": runopts.MinScriptMemoryLimit, "wasm-memory-limit": runopts.MinWasmMemoryLimit} {
		v := s.ScriptMemoryLimit
		if key == "wasm-memory-limit" {
			v = s.WasmMemoryLimit
		}
		if v == "" {
			continue
		}
		if _, err := runopts.ParseMemoryLimit(v, least); err != nil {
			out = append(out, settingProblem{key, err.Error()})
		}
	}
	if len(s.ExtraBody) > 0 {
		// Refused as the file is read, before any directory is made:
		// the same rules as --extra-body.
		if err := runopts.CheckExtraBody(s.ExtraBody, s.WireAPI); err != nil {
			var oe *outcome.Error
			msg := err.Error()
			if errors.As(err, &oe) {
				msg = oe.Msg
			}
			out = append(out, settingProblem{"extra-body", msg})
		}
	}
	slices.SortFunc(out, func(a, b settingProblem) int { return strings.Compare(a.key, b.key) })
	return out
}

// keysOf are the settings s sets.
func keysOf(s record.Settings) map[string]json.RawMessage {
	b, _ := plainJSON(s)
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(b, &m)
	return m
}

// plainJSON is v as JSON without HTML escapes, so that an extra body's
// "<" reaches the endpoint as written, whichever layer set it.
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}

// over lays top over base: each setting top has replaces base's.
func over(base, top record.Settings) record.Settings {
	m := keysOf(base)
	maps.Copy(m, keysOf(top))
	b, _ := plainJSON(m)
	var out record.Settings
	_ = json.Unmarshal(b, &out)
	return out
}

// absPaths resolves the path settings of a file's defaults against the
// file's directory.
func absPaths(s record.Settings, f *File) record.Settings {
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		return f.abs(p)
	}
	s.Workspace, s.MCPConfig, s.Profiles, s.ForgeRoot, s.Store = abs(s.Workspace), abs(s.MCPConfig), abs(s.Profiles), abs(s.ForgeRoot), abs(s.Store)
	s.SkillsRoot = slices.Clone(s.SkillsRoot)
	for i, r := range s.SkillsRoot {
		s.SkillsRoot[i] = rootPath(f, r)
	}
	s.ExternalSkillsRoot = slices.Clone(s.ExternalSkillsRoot)
	for i, r := range s.ExternalSkillsRoot {
		s.ExternalSkillsRoot[i] = f.abs(r)
	}
	return s
}

// settings are what every unit of this pipeline shares: the file's
// defaults under the command line's layer, and where each came from.
func (p *pipe) settings() (record.Settings, map[string]string) {
	s := absPaths(p.file.Defaults, p.file)
	sources := map[string]string{}
	for k := range keysOf(s) {
		sources[k] = "file defaults"
	}
	if p.manifest.Settings != nil {
		s = over(s, *p.manifest.Settings)
		for k := range keysOf(*p.manifest.Settings) {
			sources[k] = p.manifest.SettingSources[k]
		}
	}
	s = over(s, p.resumed.Settings)
	for k := range keysOf(p.resumed.Settings) {
		sources[k] = "resume " + p.resumed.Sources[k]
	}
	return s, sources
}

// apply sets a run's options from settings already checked.
func apply(s record.Settings, o *run.Options) {
	dur := func(v string) time.Duration {
		d, _ := time.ParseDuration(v)
		return d
	}
	size := func(v string, least uint64, def uint64) uint64 {
		if v == "" {
			return def
		}
		n, _ := runopts.ParseMemoryLimit(v, least)
		return n
	}
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	o.Model, o.BaseURL, o.EmbeddingModel = s.Model, s.BaseURL, s.EmbeddingModel
	if s.Workspace != "" {
		o.Workspace = s.Workspace
	}
	o.SkillsRoots, o.ExternalSkillsRoots = s.SkillsRoot, s.ExternalSkillsRoot
	if s.MaxTurns != nil {
		o.MaxTurns = *s.MaxTurns
	}
	if s.MaxTokens != nil {
		o.MaxTokens = *s.MaxTokens
	}
	o.Timeout = dur(s.Timeout)
	o.FallbackModel = s.FallbackModel
	set(&o.Stream, s.Stream)
	o.WireAPI = s.WireAPI
	o.Temperature, o.TopP, o.Seed = s.Temperature, s.TopP, s.Seed
	if s.MaxCompletionTokens != nil {
		o.MaxCompletionTokens = *s.MaxCompletionTokens
	}
	o.Stop, o.ReasoningEffort = s.Stop, s.ReasoningEffort
	if s.ExtraBody != nil {
		// As written: a number is sent with every digit it has.
		o.ExtraBody = slices.Clone(s.ExtraBody)
	}
	o.RequestTimeout, o.RetryMaxWait = dur(s.RequestTimeout), dur(s.RetryMaxWait)
	if s.MaxRetries != nil {
		o.MaxRetries = s.MaxRetries
	}
	if s.SchemaRetries != nil {
		o.SchemaRetries = *s.SchemaRetries
	}
	set(&o.AllowEmptyAnswer, s.AllowEmptyAnswer)
	if s.CatalogBudget != nil {
		o.CatalogBudget = *s.CatalogBudget
	}
	set(&o.NoSkillCatalog, s.NoSkillCatalog)
	set(&o.SkipEligibility, s.SkipEligibility)
	o.Profiles, o.ApproveCreated, o.ForgeRoot, o.SkillsStore = s.Profiles, s.ApproveCreated, s.ForgeRoot, s.Store
	set(&o.ReloadCreated, s.ReloadCreated)
	o.Sandbox = s.Sandbox
	o.ScriptMemoryLimit = size(s.ScriptMemoryLimit, runopts.MinScriptMemoryLimit, runopts.DefaultScriptMemoryLimit)
	o.WasmMemoryLimit = size(s.WasmMemoryLimit, runopts.MinWasmMemoryLimit, runopts.DefaultWasmMemoryLimit)
	o.MCPConfig, o.PassEnv, o.MCPToolEffects = s.MCPConfig, s.PassEnv, s.MCPToolEffect
	o.ReadOnly, o.AllowProtectedWrite = s.Protect, s.AllowProtectedWrite
	o.CFCMode = s.CFCMode
	set(&o.FailOnDenial, s.FailOnDenial)
	set(&o.AllowUnmediated, s.CFCAllowUnmediated)
	set(&o.HonorAllowedTools, s.HonorAllowedTools)
	o.TrustSkills = s.TrustSkill
	o.Tiers, o.Prices = s.Tier, s.Price
}
