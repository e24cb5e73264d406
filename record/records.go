package record

import (
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// ResourceReads is skill-resource-reads.json: every read_skill_resource
// attempt, success or refusal, in call order.
type ResourceReads struct {
	artifacts.Envelope
	Reads []ResourceRead `json:"reads"`
}

// ResourceRead is one attempt to read a skill resource.
type ResourceRead struct {
	Type                  string              `json:"type"`
	OutputID              string              `json:"outputId"`
	RunID                 string              `json:"runId"`
	SkillName             string              `json:"skillName"`
	Path                  string              `json:"path"`
	Status                string              `json:"status"` // read | binary | error
	ReadAt                time.Time           `json:"readAt"`
	CFCPromptRole         string              `json:"cfcPromptRole"`
	Kind                  string              `json:"kind,omitempty"`
	ResourcePath          string              `json:"resourcePath,omitempty"`
	SandboxResourcePath   string              `json:"sandboxResourcePath,omitempty"`
	RegistryDigest        artifacts.Digest    `json:"registryDigest,omitempty"`
	ObservedDigest        artifacts.Digest    `json:"observedDigest,omitempty"`
	DigestMatchesRegistry *bool               `json:"digestMatchesRegistry,omitempty"`
	RegistrySizeBytes     *int64              `json:"registrySizeBytes,omitempty"`
	ObservedSizeBytes     *int64              `json:"observedSizeBytes,omitempty"`
	ContentKind           string              `json:"contentKind,omitempty"`
	MaxBytes              int                 `json:"maxBytes"`
	Truncated             bool                `json:"truncated"`
	Diagnostics           []skills.Diagnostic `json:"diagnostics"`
	Error                 *outcome.Record     `json:"error,omitempty"`
}

// ScriptExecutions is skill-script-executions.json: every run_skill_script
// attempt, success or refusal, in call order.
type ScriptExecutions struct {
	artifacts.Envelope
	Executions []ScriptExecution `json:"executions"`
}

// ScriptExecution is one attempt to run a skill script.
type ScriptExecution struct {
	Type      string `json:"type"`
	OutputID  string `json:"outputId"`
	RunID     string `json:"runId"`
	SkillName string `json:"skillName"`
	Path      string `json:"path"`
	Status    string `json:"status"` // executed | error | timeout | memory_limit
	// TimeoutMs is the limit the call ran under; TimeoutBy is "skill"
	// when the skill's own metadata.harness.limits.timeout set it.
	TimeoutMs       int       `json:"timeoutMs,omitempty"`
	TimeoutBy       string    `json:"timeoutBy,omitempty"`
	ExecutedAt      time.Time `json:"executedAt"`
	DurationMs      int64     `json:"durationMs"`
	ExecutionTarget string    `json:"executionTarget,omitempty"` // sandbox | host
	SandboxBackend  string    `json:"sandboxBackend,omitempty"`
	Runtime         string    `json:"runtime,omitempty"`
	// Network is set when the script ran with harness's egress proxy as
	// its one way out (absent: no network).
	Network *NetworkGrant `json:"network,omitempty"`
	// Grant is what the script was given and what enforced it.
	Grant *Grant `json:"grant,omitempty"`
	// FilesWritten are the workspace files a WebAssembly module created
	// or replaced, and directories it made; WriteRefusals the writes
	// refused by write_file's rules.
	FilesWritten          []string         `json:"filesWritten,omitempty"`
	WriteRefusals         []outcome.Record `json:"writeRefusals,omitempty"`
	Argv                  []string         `json:"argv"`
	Args                  []string         `json:"args"`
	Cwd                   string           `json:"cwd,omitempty"`
	ResourcePath          string           `json:"resourcePath,omitempty"`
	SandboxResourcePath   string           `json:"sandboxResourcePath,omitempty"`
	RegistryDigest        artifacts.Digest `json:"registryDigest,omitempty"`
	ObservedDigest        artifacts.Digest `json:"observedDigest,omitempty"`
	DigestMatchesRegistry *bool            `json:"digestMatchesRegistry,omitempty"`
	ExitCode              *int             `json:"exitCode,omitempty"`
	Signal                string           `json:"signal,omitempty"`
	StdoutBytes           int64            `json:"stdoutBytes"`
	StderrBytes           int64            `json:"stderrBytes"`
	Truncated             bool             `json:"truncated"`
	ProcessLimit          string           `json:"processLimit,omitempty"` // pids-cgroup | rlimit
	OutputDigest          artifacts.Digest `json:"outputDigest,omitempty"` // of the kept stdout then stderr
	ForkRefusals          int              `json:"forkRefusals,omitempty"`
	// MemoryLimit is what enforced the memory cap (memory-cgroup or
	// rss-watchdog); a call it stopped has status memory_limit.
	MemoryLimit      string `json:"memoryLimit,omitempty"`
	MemoryLimitBytes uint64 `json:"memoryLimitBytes,omitempty"`
	// RunAs is the host identity the script ran as: caller, or uid:65534
	// when harness was root.
	RunAs       string              `json:"runAs,omitempty"`
	Diagnostics []skills.Diagnostic `json:"diagnostics"`
	Error       *outcome.Record     `json:"error,omitempty"`
	// NotUndone are the changes to git's control paths the check after
	// the call could not wholly undo; the run ended after the call.
	NotUndone []string `json:"notUndone,omitempty"`
}

// PolicySnapshot is policy-snapshot.json: the policy the run enforced.
type PolicySnapshot struct {
	artifacts.Envelope
	Digest           artifacts.Digest `json:"digest"`
	Mode             string           `json:"mode"`
	ModeSource       string           `json:"modeSource"`
	Absence          string           `json:"absence"`
	PromptRole       string           `json:"promptRole"`
	PromptRoleSource string           `json:"promptRoleSource"`
	PromptDigest     artifacts.Digest `json:"promptDigest"`
	AllowedTools     []string         `json:"allowedTools"`
	ScriptAllowlist  []string         `json:"scriptAllowlist"`
	SkillsRoots      []string         `json:"skillsRoots"`
	ExternalRoots    []string         `json:"externalSkillsRoots,omitempty"`
	// Tiers map the model tiers skills ask for to models (--tier).
	Tiers             []string       `json:"tiers,omitempty"`
	LoadedSkills      []PolicySkill  `json:"loadedSkills"`
	TrustDiagnostics  []Finding      `json:"trustDiagnostics"`
	TrustedSkills     []string       `json:"trustedSkills"`
	Sandbox           *SandboxRecord `json:"sandbox,omitempty"`
	FailOnDenial      bool           `json:"failOnDenial"`
	AllowUnmediated   bool           `json:"allowUnmediated"`
	HonorAllowedTools bool           `json:"honorAllowedTools"`
	// MCP is what MCP servers may use: the operator's server file, the
	// environment names passed, the effect choices (omitted when unused).
	MCP *PolicyMCP `json:"mcp,omitempty"`
	// AllowNetwork is the operator's --allow-network: a skill's scripts
	// and servers reach a host through the egress proxy only when it is
	// here and in the skill's own permissions (each loaded skill's).
	AllowNetwork []string `json:"allowNetwork"`
}

// PolicyMCP is the MCP part of the policy.
type PolicyMCP struct {
	ConfigFile   string           `json:"configFile,omitempty"`
	ConfigDigest artifacts.Digest `json:"configDigest,omitempty"`
	PassEnv      []string         `json:"passEnv"`
	ToolEffects  []string         `json:"toolEffects"`
}

// PolicySkill is a skill in the model's context.
type PolicySkill struct {
	Name   string           `json:"name"`
	Digest artifacts.Digest `json:"digest"`
	Source string           `json:"source"`
	// Permissions is the skill's capability manifest as declared
	// (metadata.harness.permissions): what its scripts and servers may
	// ask for, never more than the operator allowed.
	Permissions *skills.Permissions `json:"permissions,omitempty"`
	// Tier is the risk tier of the manifest alone (undeclared when the
	// skill has none); Destructive marks a skill whose every call waits
	// for a person.
	Tier        skills.Risk `json:"tier"`
	Destructive bool        `json:"destructive,omitempty"`
}

// Finding is a content-scan finding in a skill's file.
type Finding struct {
	Skill string `json:"skill"`
	Path  string `json:"path"`
	cfc.Finding
}

// PolicyTrace is policy-trace.json: one record per decision.
type PolicyTrace struct {
	artifacts.Envelope
	Decisions []TraceRecord  `json:"decisions"`
	Totals    map[string]int `json:"totals"`
}

// TraceRecord is one decision, tied to its call and the policy snapshot.
type TraceRecord struct {
	Turn           int              `json:"turn"`
	CallID         string           `json:"callId"`
	At             time.Time        `json:"at"`
	SnapshotDigest artifacts.Digest `json:"snapshotDigest"`
	cfc.Decision
}

// PolicyDecision is the data of the policy.decision event; resume
// rebuilds policy-trace.json from these.
type PolicyDecision struct {
	Turn           int              `json:"turn"`
	CallID         string           `json:"callId"`
	SnapshotDigest artifacts.Digest `json:"snapshotDigest"`
	cfc.Decision
}

// DriftReport is drift-report.json: what changed between the run's start
// and a resume.
type DriftReport struct {
	artifacts.Envelope
	Segment   int                    `json:"segment"`
	CheckedAt time.Time              `json:"checkedAt"`
	Drift     bool                   `json:"drift"`
	Allowed   bool                   `json:"allowed"`
	Identity  []DriftItem            `json:"identity"`
	Skills    skills.Changes         `json:"skills"`
	Resources []skills.ResourceDrift `json:"resources"`
}

// DriftItem is one identity field that differs.
type DriftItem struct {
	Field    string `json:"field"`
	Recorded string `json:"recorded"`
	Current  string `json:"current"`
}

// Any reports whether anything drifted.
func (d *DriftReport) Any() bool {
	return len(d.Identity)+len(d.Skills.Added)+len(d.Skills.Removed)+len(d.Skills.Changed)+len(d.Resources) > 0
}

// ChildResult is what a parent receives from a child run: a bounded
// summary and its outcome, never the child's raw tool outputs or skill
// text.
type ChildResult struct {
	Type       string     `json:"type"`
	Status     string     `json:"status"` // ok | limit | failed | refused | interrupted | provider-error
	Summary    string     `json:"summary"`
	Truncated  bool       `json:"truncated,omitempty"`
	ExitCode   int        `json:"exitCode"`
	Usage      loop.Usage `json:"usage"`
	ChildRunID string     `json:"childRunId"`
	Profile    string     `json:"profile"`
}

// ChildEnded (journal event child.ended) is a parent's record of a
// delegate_task child run each time a segment of it ends: which run its
// directory holds. A child directory swapped for another run's, which
// verifies on its own, is not this run: the verifier holds every child the
// journal names to the last such record.
type ChildEnded struct {
	// ID names the child (its run id); Dir is its run directory relative
	// to the parent's (children/<id>).
	ID  string `json:"id"`
	Dir string `json:"dir"`
	// Status is how the child's segment ended; JournalHead is its
	// journal's last line then, which stays a line of its journal however
	// a later segment (resumed by the parent) goes on.
	Status      string           `json:"status"`
	JournalHead artifacts.Digest `json:"journalHead"`
}

// SkillsSearched is one find_skills call: the query and what it returned,
// with scores, so a reviewer sees why the model found what it loaded.
type SkillsSearched struct {
	CallID string `json:"callId"`
	// Mode is bm25, or bm25+embeddings with --embedding-model.
	Mode    string        `json:"mode"`
	Query   string        `json:"query"`
	K       int           `json:"k"`
	Of      int           `json:"of"`
	Results []SearchScore `json:"results"`
}

// SearchScore is one ranked skill.
type SearchScore struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// Embeddings is one use of the embeddings endpoint by find_skills: how
// many texts needed vectors and how many of them were not in the cache.
type Embeddings struct {
	Model    string `json:"model"`
	Inputs   int    `json:"inputs"`
	Embedded int    `json:"embedded"`
}

// RegistryDelta is the data of registry.delta: a skill this run promoted
// and, with --reload-created, added to its own registry. Resume applies
// the deltas to the recorded snapshot in journal order.
type RegistryDelta struct {
	Skill   skills.Skill     `json:"skill"`
	Version artifacts.Digest `json:"version"`
	CallID  string           `json:"callId,omitempty"`
}

// CommandExecutions is command-executions.json: every run_command call,
// allowed or refused, in order.
type CommandExecutions struct {
	artifacts.Envelope
	Executions []CommandExecution `json:"executions"`
}

// CommandExecution is one run_command call.
type CommandExecution struct {
	Type     string `json:"type"`
	OutputID string `json:"outputId"`
	RunID    string `json:"runId"`
	// Argv is the command as the model asked it, executed directly (no
	// shell); Pattern is the operator's --allow-command it matched.
	Argv    []string `json:"argv"`
	Pattern string   `json:"pattern,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	Status  string   `json:"status"` // executed | error | timeout | memory_limit
	// StdinBytes is the size of what the call gave the command on stdin.
	StdinBytes      int       `json:"stdinBytes,omitempty"`
	TimeoutMs       int       `json:"timeoutMs,omitempty"`
	ExecutedAt      time.Time `json:"executedAt"`
	DurationMs      int64     `json:"durationMs"`
	ExecutionTarget string    `json:"executionTarget,omitempty"` // sandbox | host
	SandboxBackend  string    `json:"sandboxBackend,omitempty"`
	// Grant is what the command was given and what enforced it.
	Grant            *Grant           `json:"grant,omitempty"`
	ExitCode         *int             `json:"exitCode,omitempty"`
	Signal           string           `json:"signal,omitempty"`
	StdoutBytes      int64            `json:"stdoutBytes"`
	StderrBytes      int64            `json:"stderrBytes"`
	Truncated        bool             `json:"truncated"`
	OutputDigest     artifacts.Digest `json:"outputDigest,omitempty"`
	ProcessLimit     string           `json:"processLimit,omitempty"`
	ForkRefusals     int              `json:"forkRefusals,omitempty"`
	MemoryLimit      string           `json:"memoryLimit,omitempty"`
	MemoryLimitBytes uint64           `json:"memoryLimitBytes,omitempty"`
	RunAs            string           `json:"runAs,omitempty"`
	Error            *outcome.Record  `json:"error,omitempty"`
	// NotUndone are the changes to git's control paths the check after
	// the call could not wholly undo; the run ended after the call.
	NotUndone []string `json:"notUndone,omitempty"`
}
