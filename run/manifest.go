package run

import (
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
)

// Artifact file names in the run directory.
const (
	fileManifest    = "run.json"
	fileJournal     = "journal.jsonl"
	fileRegistry    = "skill-registry.json"
	fileActivations = "skill-activations.json"
	dirToolOutputs  = "tool-outputs"
)

// Run statuses in run.json.
const (
	StatusRunning     = "running"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusLimit       = "limit-reached"
	StatusProvider    = "provider-error"
	StatusRefused     = "refused"
	StatusInterrupted = "interrupted"
)

// Manifest is run.json: what ran, with what inputs (no secrets), and how
// it ended. It is rewritten atomically at start and at the end.
type Manifest struct {
	artifacts.Envelope
	RunID          string        `json:"runId"`
	HarnessVersion string        `json:"harnessVersion"`
	Identity       Identity      `json:"identity"`
	Inputs         Inputs        `json:"inputs"`
	Sources        Sources       `json:"sources"`
	Status         string        `json:"status"`
	ExitCode       int           `json:"exitCode"`
	Reason         string        `json:"reason,omitempty"`
	Resumable      bool          `json:"resumable"`
	Error          *ErrorRecord  `json:"error,omitempty"`
	StartedAt      time.Time     `json:"startedAt"`
	FinishedAt     *time.Time    `json:"finishedAt,omitempty"`
	Turns          int           `json:"turns"`
	Usage          UsageRecord   `json:"usage"`
	Artifacts      []string      `json:"artifacts"`
	Final          *FinalMessage `json:"final,omitempty"`
	// Segments are the run's invocations: the first run, then each resume.
	// Status, usage and turns above are the run's totals.
	Segments []Segment `json:"segments"`
}

// Segment is one invocation of a run (the first, or a resume).
type Segment struct {
	Segment    int          `json:"segment"`
	StartedAt  time.Time    `json:"startedAt"`
	FinishedAt *time.Time   `json:"finishedAt,omitempty"`
	Status     string       `json:"status"`
	ExitCode   int          `json:"exitCode"`
	Reason     string       `json:"reason,omitempty"`
	Limits     LimitsRecord `json:"limits"`
	Turns      int          `json:"turns"`
	Usage      loop.Usage   `json:"usage"`
}

// Sources records, per option, where its effective value came from.
type Sources struct {
	ConfigFile string            `json:"configFile,omitempty"`
	Values     map[string]string `json:"values"`
}

// Inputs are the effective options, as far as they may be written down.
type Inputs struct {
	Workspace    PathPair   `json:"workspace"`
	Cwd          string     `json:"cwd"`
	SkillsRoots  []PathPair `json:"skillsRoots"`
	Skills       []string   `json:"skills"`
	Model        string     `json:"model"`
	BaseURL      string     `json:"baseUrl,omitempty"`
	PromptSource string     `json:"promptSource"`
	// Prompt is the operator's task. It is kept so that a run that
	// crashed before its conversation was journaled can still resume.
	Prompt        string           `json:"prompt"`
	PromptDigest  artifacts.Digest `json:"promptDigest"`
	PromptRole    string           `json:"promptRole"`
	AllowTools    []string         `json:"allowTools"`
	AllowScripts  []string         `json:"allowSkillScripts"`
	NoCatalog     bool             `json:"noSkillCatalog"`
	CatalogBudget int              `json:"catalogBudget"`
	AllowDrift    bool             `json:"allowDrift"`
	CFC           CFCRecord        `json:"cfc"`
	// Profiles is the subagent profiles file; Depth and MaxDepth place a
	// run in a tree of subagents (0 and 1 for a top-level run).
	Profiles         string         `json:"profiles,omitempty"`
	Depth            int            `json:"depth"`
	MaxDepth         int            `json:"maxDepth"`
	ActivationSource string         `json:"activationSource,omitempty"`
	Sandbox          *SandboxRecord `json:"sandbox,omitempty"`
	Tools            []string       `json:"tools"`
	Limits           LimitsRecord   `json:"limits"`
	Record           string         `json:"record,omitempty"`
	Replay           string         `json:"replay,omitempty"`
	ArtifactsDir     string         `json:"artifactsDir"`
}

// PathPair is a path as the host and the sandbox see it.
type PathPair struct {
	Host    string `json:"host"`
	Sandbox string `json:"sandbox"`
}

// LimitsRecord is loop.Limits in its written form.
type LimitsRecord struct {
	MaxTurns  int    `json:"maxTurns"`
	Timeout   string `json:"timeout,omitempty"`
	MaxTokens int64  `json:"maxTokens"`
}

// UsageRecord is token usage per turn and in total.
type UsageRecord struct {
	Total loop.Usage   `json:"total"`
	Turns []loop.Usage `json:"turns"`
}

// FinalMessage is the model's last answer.
type FinalMessage struct {
	Content string `json:"content"`
}

// Activations is skill-activations.json.
type Activations struct {
	artifacts.Envelope
	Activations []Activation `json:"activations"`
}

// Activation records one skill entering the model's context.
type Activation struct {
	Name          string           `json:"name"`
	Source        string           `json:"source"` // cli-preload | model-tool | subagent-inherit
	RunID         string           `json:"runId"`
	SkillPath     string           `json:"skillPath"`
	SandboxPath   string           `json:"sandboxSkillPath"`
	Digest        artifacts.Digest `json:"digest"`
	ActivatedAt   time.Time        `json:"activatedAt"`
	CFCPromptRole string           `json:"cfcPromptRole"`
}

// CFCRecord is the policy configuration a run was started with.
type CFCRecord struct {
	Mode              string   `json:"mode"`
	FailOnDenial      bool     `json:"failOnDenial"`
	AllowUnmediated   bool     `json:"allowUnmediated"`
	HonorAllowedTools bool     `json:"honorAllowedTools"`
	TrustSkills       []string `json:"trustSkills"`
}
