package record

import (
	"github.com/harness-dev/harness/artifacts"
)

// File and directory names in an eval directory. The cells run as one
// batch (batch/, a batch directory like any other); each cell's grading is
// grading/<cell>.json; every file is vouched for by eval-journal.jsonl.
const (
	FileEval        = "eval.json"
	FileEvalJournal = "eval-journal.jsonl"
	FileEvalResult  = "eval-result.json"
	// FileEvalBatch is the batch file the eval writes for its cells.
	FileEvalBatch = "cells.batch.json"
	// FileBenchmark is benchmark.json in skill-creator's schema, read by
	// its viewer; FileBenchmarkMD the same numbers for a job summary.
	FileBenchmark   = "benchmark.json"
	FileBenchmarkMD = "benchmark.md"
	FileEvalJUnit   = "junit.xml"
	// DirEvalBatch is the batch directory's name inside the eval
	// directory; DirEvalGrading holds the gradings, DirEvalCells each
	// cell's workspace (cells/<cell>/), DirEvalRoots each configuration's
	// skill root (roots/<configuration>/).
	DirEvalBatch   = "batch"
	DirEvalGrading = "grading"
	DirEvalCells   = "cells"
	DirEvalRoots   = "roots"

	TypeEval        = "harness.eval"
	TypeEvalGrading = "harness.eval-grading"
	TypeEvalResult  = "harness.eval-result"
	EvalVersion     = 1
)

// Eval journal events.
const (
	EventEvalStarted = "eval.started"
	EventEvalResumed = "eval.resumed"
	EventCellGraded  = "cell.graded"
	// EventCellEnded records a cell's workspace digest as its run ended.
	EventCellEnded    = "cell.ended"
	EventEvalFinished = "eval.finished"
)

// Configurations of an eval cell, as skill-creator names them (its viewer
// groups by these exact strings), and the trigger configuration.
const (
	ConfigWithSkill    = "with_skill"
	ConfigWithoutSkill = "without_skill"
	ConfigOldSkill     = "old_skill"
	ConfigTrigger      = "trigger"
)

// What an expectation or check came to. Ungraded is never passed: a
// grader that did not answer in shape leaves it so, and it counts against
// the pass rate's denominator only as "not known" (see EvalSummary).
const (
	GradePassed   = "passed"
	GradeFailed   = "failed"
	GradeUngraded = "ungraded"
)

// EvalManifest is eval.json: what the eval is (the skill, the eval file,
// the configurations, models and epochs) and its cells, fixed when the
// eval starts. Resume holds the files to it.
type EvalManifest struct {
	artifacts.Envelope
	EvalID string `json:"evalId"`
	Skill  string `json:"skill"`
	// SkillDir is where the skill was read (as given, for people);
	// SkillDigest is the digest of its files as copied into roots/.
	SkillDir    string           `json:"skillDir"`
	SkillDigest artifacts.Digest `json:"skillDigest"`
	// Baseline and BaselineDigest are the old_skill version, when asked.
	Baseline       string           `json:"baseline,omitempty"`
	BaselineDigest artifacts.Digest `json:"baselineDigest,omitempty"`
	// EvalFile and its digest; TriggersFile the same for trigger queries.
	EvalFile       string           `json:"evalFile,omitempty"`
	EvalDigest     artifacts.Digest `json:"evalDigest,omitempty"`
	TriggersFile   string           `json:"triggersFile,omitempty"`
	TriggersDigest artifacts.Digest `json:"triggersDigest,omitempty"`
	Configurations []string         `json:"configurations"`
	Models         []string         `json:"models"`
	Epochs         int              `json:"epochs"`
	// Grader is the grader model ("" = expectations in words stay
	// ungraded) and GraderPromptDigest the digest of its prompt.
	GraderModel string `json:"graderModel,omitempty"`
	// GraderBaseURL is the grader's endpoint, without credentials: where
	// a resume asks it unless told otherwise.
	GraderBaseURL      string           `json:"graderBaseUrl,omitempty"`
	GraderPromptDigest artifacts.Digest `json:"graderPromptDigest,omitempty"`
	// GraderSettings are the run settings the grader's requests take
	// (request-timeout, max-retries, retry-max-wait, stream), so that a
	// resume's grader is bounded as the eval's was.
	GraderSettings *Settings `json:"graderSettings,omitempty"`
	Shard          string    `json:"shard,omitempty"`
	// SettingsDigest is the digest of the run settings and tools every
	// cell got (not the endpoint): shards merged, or an eval resumed by
	// --or-resume, must share them.
	SettingsDigest artifacts.Digest `json:"settingsDigest,omitempty"`
	// Gate is what the numbers must meet; AllowCommands and CommandGrant
	// what command checks run through (a resume holds to them).
	Gate          EvalGate   `json:"gate"`
	AllowCommands []string   `json:"allowCommands,omitempty"`
	CommandGrant  string     `json:"commandGrant,omitempty"`
	Cells         []EvalCell `json:"cells"`
}

// EvalCell is one eval × configuration × model × epoch, or one trigger
// query × model × epoch: one task of the eval's batch.
type EvalCell struct {
	ID     string `json:"id"`
	EvalID string `json:"evalId"`
	// EvalName is the eval's name, for people (benchmark.json's
	// eval_name, the report's headings); "" shows the id instead.
	EvalName      string `json:"evalName,omitempty"`
	Configuration string `json:"configuration"`
	Model         string `json:"model"`
	Epoch         int    `json:"epoch"`
	// ShouldTrigger is a trigger query's label.
	ShouldTrigger *bool `json:"shouldTrigger,omitempty"`
}

// EvalGrading is grading/<cell>.json: the cell's run as it ended and each
// expectation and check with skill-creator's fields (text, passed,
// evidence) and its status.
type EvalGrading struct {
	artifacts.Envelope
	Cell EvalCell `json:"cell"`
	// Run is how the cell's run ended, from its verified run directory.
	Run          EvalRun            `json:"run"`
	Expectations []GradedItem       `json:"expectations"`
	Summary      GradingSummary     `json:"summary"`
	Triggered    *bool              `json:"triggered,omitempty"`
	Grader       string             `json:"grader,omitempty"`
	PromptDigest artifacts.Digest   `json:"graderPromptDigest,omitempty"`
	GraderUsage  *ResultUsage       `json:"graderUsage,omitempty"`
	Timing       map[string]float64 `json:"timing,omitempty"`
}

// EvalRun is what a grading takes of the cell's run.
type EvalRun struct {
	RunDir     string           `json:"runDir"` // relative to the eval directory
	RunID      string           `json:"runId,omitempty"`
	Status     string           `json:"status"`
	ExitCode   int              `json:"exitCode"`
	Turns      int              `json:"turns"`
	Tokens     int64            `json:"tokens"`
	CostUSD    *float64         `json:"costUsd,omitempty"`
	DurationMs int64            `json:"durationMs"`
	ToolCalls  map[string]int   `json:"toolCalls,omitempty"`
	Loaded     []string         `json:"skillsLoaded,omitempty"`
	Answer     string           `json:"answer"`
	Errors     int              `json:"errors"`
	Head       artifacts.Digest `json:"journalHead,omitempty"`
}

// GradedItem is one expectation (graded by a model) or check (by harness).
type GradedItem struct {
	Text     string `json:"text"`
	Passed   bool   `json:"passed"`
	Evidence string `json:"evidence"`
	// Status is passed, failed or ungraded; Kind is "expectation" or
	// the check's kind (answer-contains, file-exists, command, ...).
	Status string `json:"status"`
	Kind   string `json:"kind"`
}

// State is the item's status; one written without it falls back to its
// passed flag, and anything else is ungraded.
func (it GradedItem) State() string {
	switch it.Status {
	case GradePassed, GradeFailed, GradeUngraded:
		return it.Status
	case "":
		if it.Passed {
			return GradePassed
		}
		return GradeFailed
	}
	return GradeUngraded
}

// GradingSummary counts a cell's items as skill-creator does, with the
// ungraded apart: PassRate is passed / total, ungraded counted as not
// passed.
type GradingSummary struct {
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Ungraded int     `json:"ungraded"`
	Total    int     `json:"total"`
	PassRate float64 `json:"pass_rate"`
}

// EvalResult is eval-result.json.
type EvalResult struct {
	artifacts.Envelope
	EvalID   string `json:"evalId"`
	Skill    string `json:"skill"`
	Dir      string `json:"dir"`
	Status   string `json:"status"` // passed, failed (gate missed), incomplete
	ExitCode int    `json:"exitCode"`
	Message  string `json:"message,omitempty"`
	// Cells counts cells by how far they got: graded, not_run, ...
	Cells map[string]int `json:"cells"`
	// Summaries are per configuration and model, over every graded cell.
	Summaries []EvalSummary `json:"summaries"`
	// Deltas are with_skill minus without_skill (and minus old_skill),
	// per model.
	Deltas []EvalDelta `json:"deltas,omitempty"`
	// PerEval are the same numbers per eval, for the report.
	PerEval []EvalSummary `json:"perEval,omitempty"`
	// NonDiscriminating are expectations that passed (or failed) in every
	// cell of every configuration: they tell nothing of the skill.
	NonDiscriminating []NonDiscriminating `json:"nonDiscriminating,omitempty"`
	Triggers          []TriggerSummary    `json:"triggers,omitempty"`
	Gate              *EvalGate           `json:"gate,omitempty"`
	Usage             ResultUsage         `json:"usage"`
	GraderUsage       ResultUsage         `json:"graderUsage"`
	CostUSD           *float64            `json:"costUsd,omitempty"`
	Resumable         bool                `json:"resumable"`
	ResumeCommand     string              `json:"resumeCommand,omitempty"`
}

// Stat is a sample's mean, its sample standard deviation, range, and a
// 95% interval of the mean (Student's t), with n.
type Stat struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Low95  float64 `json:"low95"`
	High95 float64 `json:"high95"`
}

// EvalSummary is one configuration on one model (and one eval, in
// PerEval): its pass rate, time, tokens and cost per cell.
type EvalSummary struct {
	EvalID        string `json:"evalId,omitempty"`
	Configuration string `json:"configuration"`
	Model         string `json:"model"`
	PassRate      Stat   `json:"passRate"`
	Seconds       Stat   `json:"seconds"`
	Tokens        Stat   `json:"tokens"`
	CostUSD       *Stat  `json:"costUsd,omitempty"`
	// Ungraded counts items no grader decided; Failed cells whose run
	// did not succeed.
	Ungraded  int `json:"ungraded"`
	RunFailed int `json:"runFailed"`
}

// EvalDelta is one configuration's mean pass rate minus another's.
type EvalDelta struct {
	Model    string  `json:"model"`
	Of       string  `json:"of"`
	Minus    string  `json:"minus"`
	PassRate float64 `json:"passRate"`
	Seconds  float64 `json:"seconds"`
	Tokens   float64 `json:"tokens"`
}

// NonDiscriminating is an expectation whose outcome did not depend on the
// configuration.
type NonDiscriminating struct {
	EvalID string `json:"evalId"`
	Text   string `json:"text"`
	Always string `json:"always"` // passed or failed
}

// TriggerSummary is how a skill's description made a model reach for it.
type TriggerSummary struct {
	Model          string  `json:"model"`
	N              int     `json:"n"`
	TruePositives  int     `json:"truePositives"`
	FalsePositives int     `json:"falsePositives"`
	TrueNegatives  int     `json:"trueNegatives"`
	FalseNegatives int     `json:"falseNegatives"`
	Precision      float64 `json:"precision"`
	Recall         float64 `json:"recall"`
	Accuracy       float64 `json:"accuracy"`
}

// EvalGate is what was asked of the numbers and whether they met it.
type EvalGate struct {
	MinPassRate      *float64 `json:"minPassRate,omitempty"`
	MinDelta         *float64 `json:"minDelta,omitempty"`
	NoRegressionFrom string   `json:"noRegressionFrom,omitempty"`
	Met              bool     `json:"met"`
	// Missed says, per condition missed, the numbers.
	Missed []string `json:"missed,omitempty"`
}
