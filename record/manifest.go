package record

import (
	"encoding/json"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
)

// Manifest is run.json: what ran, with what inputs (no secrets), and how
// it ended. It is rewritten atomically at start and at the end.
type Manifest struct {
	artifacts.Envelope
	RunID          string          `json:"runId"`
	HarnessVersion string          `json:"harnessVersion"`
	Identity       Identity        `json:"identity"`
	Inputs         Inputs          `json:"inputs"`
	Sources        Sources         `json:"sources"`
	Outputs        *Outputs        `json:"outputs,omitempty"`
	Status         string          `json:"status"`
	ExitCode       int             `json:"exitCode"`
	Reason         string          `json:"reason,omitempty"`
	Resumable      bool            `json:"resumable"`
	Error          *outcome.Record `json:"error,omitempty"`
	StartedAt      time.Time       `json:"startedAt"`
	FinishedAt     *time.Time      `json:"finishedAt,omitempty"`
	Turns          int             `json:"turns"`
	Usage          UsageRecord     `json:"usage"`
	Artifacts      []string        `json:"artifacts"`
	Final          *FinalMessage   `json:"final,omitempty"`
	// Segments are the run's invocations: the first run, then each resume.
	// Status, usage and turns above are the run's totals.
	Segments []Segment `json:"segments"`
	// UnmappedTiers are tiers a child run asked for that the operator
	// mapped to no model: it ran on the run's own model instead.
	UnmappedTiers []string `json:"unmappedTiers,omitempty"`
	// JournalHead is the digest of the journal's last line when this
	// segment ended (its run.finished): resume refuses a journal that goes
	// on past a recorded end.
	JournalHead artifacts.Digest `json:"journalHead,omitempty"`
	// Seal is set when the run was written with HARNESS_RUN_KEY.
	Seal *Seal `json:"seal,omitempty"`
}

// Seal is an HMAC-SHA256, under the operator's run key, of run.json with
// the seal's mac left empty; the journal head it covers commits to every
// journal line.
type Seal struct {
	Algorithm   string           `json:"algorithm"` // hmac-sha256
	JournalHead artifacts.Digest `json:"journalHead"`
	Mac         string           `json:"mac"`
}

// Segment is one invocation of a run (the first, or a resume).
type Segment struct {
	Segment    int        `json:"segment"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Status     string     `json:"status"`
	ExitCode   int        `json:"exitCode"`
	Reason     string     `json:"reason,omitempty"`
	Limits     Limits     `json:"limits"`
	Turns      int        `json:"turns"`
	Usage      loop.Usage `json:"usage"`
}

// Sources records, per option, where its effective value came from
// ("flag", "env", "config", "default"; "config+flag" for confirm-tool,
// whose entries from every source combine).
type Sources struct {
	ConfigFile string            `json:"configFile,omitempty"`
	Values     map[string]string `json:"values"`
}

// Inputs are the effective options that shape a run, as far as they may be
// written down (never the key). Resume restores a run from them alone.
type Inputs struct {
	Workspace   PathPair   `json:"workspace"`
	Cwd         string     `json:"cwd"`
	SkillsRoots []PathPair `json:"skillsRoots"`
	// ExternalSkillsRoots lie outside the workspace and come after
	// SkillsRoots in precedence; Sandbox is /skills/<label>.
	ExternalSkillsRoots []PathPair `json:"externalSkillsRoots,omitempty"`
	EmbeddingModel      string     `json:"embeddingModel,omitempty"`
	// Forge is how create_skill and compose_skills promote, when allowed.
	Forge *ForgeInputs `json:"forge,omitempty"`
	// LearnedFrom is the run this one reflects on (harness reflect).
	LearnedFrom string `json:"learnedFrom,omitempty"`
	// Discovery is what discover_skills and install_skill were given.
	Discovery *DiscoveryInputs `json:"discovery,omitempty"`
	// Protect are further paths the tools never touch (a pipeline's
	// records).
	Protect      []string `json:"protect,omitempty"`
	Skills       []string `json:"skills"`
	Model        string   `json:"model"`
	WireAPI      string   `json:"wireApi,omitempty"`
	BaseURL      string   `json:"baseUrl,omitempty"`
	PromptSource string   `json:"promptSource"`
	// Prompt is the operator's task, kept because a run that crashed
	// before its conversation was journaled is seeded again from it.
	Prompt        string           `json:"prompt"`
	PromptDigest  artifacts.Digest `json:"promptDigest"`
	PromptRole    string           `json:"promptRole"`
	AllowTools    []string         `json:"allowTools"`
	AllowScripts  []string         `json:"allowSkillScripts"`
	NoCatalog     bool             `json:"noSkillCatalog"`
	CatalogBudget int              `json:"catalogBudget"`
	AllowDrift    bool             `json:"allowDrift"`
	// SkipEligibility preloads skills this machine cannot run.
	SkipEligibility bool      `json:"skipEligibility"`
	CFC             CFCRecord `json:"cfc"`
	// Profiles is the subagent profiles file and ProfilesDigest the
	// digest of its content as the run read it; Depth and MaxDepth place
	// a run in a tree of subagents (0 and 1 for a top-level run).
	Profiles         string           `json:"profiles,omitempty"`
	ProfilesDigest   artifacts.Digest `json:"profilesDigest,omitempty"`
	Depth            int              `json:"depth"`
	MaxDepth         int              `json:"maxDepth"`
	ActivationSource string           `json:"activationSource,omitempty"`
	Sandbox          *SandboxRecord   `json:"sandbox,omitempty"`
	// AllowCommands are the operator's --allow-command patterns.
	AllowCommands []string `json:"allowCommands,omitempty"`
	// CommandGrant is the operator's --command-grant file and
	// CommandGrantDigest its digest as the run read it.
	CommandGrant       string           `json:"commandGrant,omitempty"`
	CommandGrantDigest artifacts.Digest `json:"commandGrantDigest,omitempty"`
	// Tiers map the model tiers skills ask for to models (TIER=MODEL, as
	// the operator gave them); Prices are per million tokens, input/output
	// (MODEL=IN/OUT), for the cost in result.json.
	Tiers  []string `json:"tiers,omitempty"`
	Prices []string `json:"prices,omitempty"`
	// ScriptMemoryLimit caps each skill script's memory, in bytes.
	ScriptMemoryLimit uint64 `json:"scriptMemoryLimit,omitempty"`
	// WasmMemoryLimit caps each WebAssembly script's linear memory, in bytes.
	WasmMemoryLimit uint64 `json:"wasmMemoryLimit,omitempty"`
	// MCPConfig is the operator's MCP server file and MCPConfigDigest its
	// digest when the run was created; PassEnv the names passed to
	// servers (never values); MCPToolEffects the operator's effect choices.
	MCPConfig       string           `json:"mcpConfig,omitempty"`
	MCPConfigDigest artifacts.Digest `json:"mcpConfigDigest,omitempty"`
	PassEnv         []string         `json:"passEnv,omitempty"`
	MCPToolEffects  []string         `json:"mcpToolEffects,omitempty"`
	// AllowNetwork is the operator's --allow-network.
	AllowNetwork []string `json:"allowNetwork,omitempty"`
	// ReadOnly are the operator's --protect paths; AllowProtectedWrite
	// its --allow-protected-write paths.
	ReadOnly            []string `json:"readOnly,omitempty"`
	AllowProtectedWrite []string `json:"allowProtectedWrite,omitempty"`
	// ConfirmTools are the operator's --confirm-tool patterns.
	ConfirmTools []string `json:"confirmTools,omitempty"`
	// Params are the generation parameters sent with every request.
	Params loop.Params `json:"params"`
	// OutputSchema is the JSON Schema the final answer must match, with
	// the retries the model gets; AllowEmptyAnswer accepts an empty one.
	OutputSchema     json.RawMessage `json:"outputSchema,omitempty"`
	SchemaRetries    int             `json:"schemaRetries,omitempty"`
	AllowEmptyAnswer bool            `json:"allowEmptyAnswer,omitempty"`
	// Attachments are files handed to the model as context.
	Attachments  []Attachment `json:"attachments,omitempty"`
	Tools        []string     `json:"tools"`
	Limits       Limits       `json:"limits"`
	Record       string       `json:"record,omitempty"`
	Replay       string       `json:"replay,omitempty"`
	ArtifactsDir string       `json:"artifactsDir"`
}

// Attachment is a file given with --attach: its content reaches the model
// as a labelled block of context, never as a command.
type Attachment struct {
	Path    string           `json:"path"`
	Digest  artifacts.Digest `json:"digest"`
	Content string           `json:"content"`
}

// PathPair is a path as the host and the sandbox see it.
type PathPair struct {
	Host    string `json:"host"`
	Sandbox string `json:"sandbox"`
}

// ForgeInputs are the SkillForge settings of a run.
type ForgeInputs struct {
	ApproveCreated string `json:"approveCreated"`
	Root           string `json:"root"`
	Store          string `json:"store"`
	ReloadCreated  bool   `json:"reloadCreated,omitempty"`
	// MinPassRate is --forge-min-pass-rate: a draft that ships evals is
	// promoted only when with_skill's mean pass rate is at least this.
	MinPassRate *float64 `json:"minPassRate,omitempty"`
}

// DiscoveryInputs are the skill indexes (NAME=URL), the trusted sources
// and the approval tier of discover_skills and install_skill.
type DiscoveryInputs struct {
	Sources          []string `json:"sources"`
	TrustedSources   []string `json:"trustedSources"`
	ApproveInstalled string   `json:"approveInstalled"`
}

// Limits is loop.Limits in its written form.
type Limits struct {
	MaxTurns  int    `json:"maxTurns"`
	Timeout   string `json:"timeout,omitempty"`
	MaxTokens int64  `json:"maxTokens"`
	// MaxToolCallsPerTurn is 0 in runs recorded before there was a bound.
	MaxToolCallsPerTurn int `json:"maxToolCallsPerTurn,omitempty"`
}

// LimitsOf writes l down.
func LimitsOf(l loop.Limits) Limits {
	r := Limits{MaxTurns: l.MaxTurns, MaxTokens: l.MaxTokens, MaxToolCallsPerTurn: l.MaxToolCallsPerTurn}
	if l.Timeout > 0 {
		r.Timeout = l.Timeout.String()
	}
	return r
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

// CFCRecord is the policy configuration a run was started with.
type CFCRecord struct {
	Mode              string   `json:"mode"`
	FailOnDenial      bool     `json:"failOnDenial"`
	AllowUnmediated   bool     `json:"allowUnmediated"`
	HonorAllowedTools bool     `json:"honorAllowedTools"`
	TrustSkills       []string `json:"trustSkills"`
}

// SandboxRecord is the sandbox as probed at run start.
type SandboxRecord struct {
	Requested string `json:"requested"`
	Backend   string `json:"backend,omitempty"`
	Error     string `json:"error,omitempty"`
}

// identityVersion rises whenever the set or encoding of identity fields
// changes, so digests of different versions never compare equal by accident.
const identityVersion = 2

// Identity is a digest over everything that determines what a run does,
// with its parts kept beside it so a difference can be named. Transport
// settings (timeouts, retries, base URL credentials) are deliberately out:
// they change how a run reaches the model, not what it asks.
type Identity struct {
	Version        int                `json:"version"`
	Digest         artifacts.Digest   `json:"digest"`
	HarnessVersion string             `json:"harnessVersion"`
	Model          string             `json:"model"`
	WireAPI        string             `json:"wireApi,omitempty"`
	Params         loop.Params        `json:"params"`
	PromptDigest   artifacts.Digest   `json:"promptDigest"`
	PromptRole     string             `json:"promptRole"`
	ToolsDigest    artifacts.Digest   `json:"toolsDigest"`
	PolicyDigest   artifacts.Digest   `json:"policyDigest"`
	Limits         Limits             `json:"limits"`
	RegistryDigest artifacts.Digest   `json:"registryDigest,omitempty"`
	Skills         []string           `json:"skills"`
	SkillDigests   []artifacts.Digest `json:"skillDigests"`
	// Attachments are the digests of the --attach files.
	Attachments []artifacts.Digest `json:"attachments,omitempty"`
}

// Seal computes the identity digest over every other field.
func (id *Identity) Seal() error {
	id.Version = identityVersion
	id.Digest = ""
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	id.Digest = artifacts.DigestBytes(b)
	return nil
}

// Activations is skill-activations.json.
type Activations struct {
	artifacts.Envelope
	Activations []Activation `json:"activations"`
}

// Activation sources.
const (
	SourceCLIPreload = "cli-preload"
	SourceModelTool  = "model-tool"
	SourceSubagent   = "subagent-profile"
)

// Activation records one skill entering the model's context.
type Activation struct {
	Name          string           `json:"name"`
	Source        string           `json:"source"` // cli-preload | model-tool | subagent-profile
	RunID         string           `json:"runId"`
	SkillPath     string           `json:"skillPath"`
	SandboxPath   string           `json:"sandboxSkillPath"`
	Digest        artifacts.Digest `json:"digest"`
	ActivatedAt   time.Time        `json:"activatedAt"`
	CFCPromptRole string           `json:"cfcPromptRole"`
}

// ReadManifest reads run.json beneath a run directory (no link leads
// out) and decodes it as its type and version.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	data, err := artifacts.ReadBeneath(dir, FileManifest)
	if err == nil {
		err = artifacts.DecodeArtifact(data, TypeManifest, Version, &m)
	}
	return m, err
}
