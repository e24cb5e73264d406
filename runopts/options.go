// Package runopts is what one run is asked to do: the options a caller
// fills in, their defaults, the check of what is wrong with them alone
// (before anything touches the disk), and the policy they amount to, as
// digested into the run's identity.
//
// run resolves these options against the filesystem and records them; a
// resume restores them from run.json. runopts knows nothing of a run
// directory.
package runopts

import (
	"fmt"
	"io"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// Defaults of the options a caller other than the CLI (a pipeline phase)
// must fill in itself; the CLI's flag defaults are the same values.
const (
	DefaultMaxTurns = 50
	// DefaultMaxToolCallsPerTurn bounds the calls of one answer that run:
	// far more than a turn needs, far fewer than a runaway model makes.
	DefaultMaxToolCallsPerTurn = 64
	DefaultCatalogBudget       = 8000
	DefaultSchemaRetries       = 2
	DefaultMaxRetries          = 3
	DefaultScriptMemoryLimit   = 1 << 30
	DefaultWasmMemoryLimit     = 64 << 20
)

// The smallest memory caps code can run under: the Landlock helper and a
// shell take most of MinScriptMemoryLimit already, and a WebAssembly
// module with less than MinWasmMemoryLimit cannot start.
const (
	MinScriptMemoryLimit = 32 << 20
	MinWasmMemoryLimit   = 1 << 20
)

// ParseMemoryLimit reads a memory cap such as 512MiB, 1GiB or 1000000
// (bytes) that must be at least least bytes.
func ParseMemoryLimit(s string, least uint64) (uint64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%q: give a size such as 512MiB or 2GiB", s)
	}
	if n < least {
		return 0, fmt.Errorf("%s is below the smallest cap scripts can run under (%dMiB)", s, least>>20)
	}
	return n, nil
}

// Options is everything one `harness run` needs. The zero value of each
// field is documented; cmd/harness fills it from flags, environment and the
// config file and records where each value came from in Sources.
//
// The fields that shape a run are written to run.json (see inputs.go) and
// restored from it on resume; a test holds every such field to that round
// trip, so one added here and forgotten there fails.
type Options struct {
	// Workspace is the directory the agent works in ("" = the current
	// directory). It appears to the model as /workspace.
	Workspace string
	// Cwd is the working directory for relative tool paths, relative to the
	// workspace ("" = the workspace root).
	Cwd string
	// SkillsRoots are skill roots in precedence order, relative to the
	// invocation directory; each must resolve inside the workspace. Empty
	// disables skills.
	SkillsRoots []string
	// ExternalSkillsRoots are read-only roots outside the workspace, after
	// SkillsRoots in precedence; the model sees them at /skills/<label>.
	ExternalSkillsRoots []string
	// Previous is a snapshot of the same roots taken shortly before (a
	// batch takes one for all its tasks): a file whose stat fingerprint
	// (inode, size, modification and change time, in nanoseconds) is
	// unchanged keeps its digest without being read again (files changed
	// within two seconds of that snapshot's start excepted). It must come
	// from skills.Scan in this process; a decoded one is ignored.
	// Performance only: the run's own snapshot is still taken and recorded.
	Previous *skills.Registry
	// Audits remembers content-scan findings by skill digests across runs
	// of one batch (nil: scan every time). Performance only.
	Audits *audit.Cache
	// EmbeddingModel, when set, adds a semantic stage to find_skills:
	// skill descriptions and the query are embedded with this model on the
	// same endpoint, and the two rankings fused.
	EmbeddingModel string
	// Forge configures create_skill and compose_skills (allowed with
	// --allow-tool like any side effect): the approval tier up to which a
	// passing draft is promoted at once (minimal, low, moderate or none;
	// "" = low), the root promoted skills go into ("" = the first skills
	// root), and the skill store that keeps their versions ("" = the
	// default store under the current directory).
	ApproveCreated string
	ForgeRoot      string
	SkillsStore    string
	// ForgeMinPassRate (--forge-min-pass-rate, 0 to 1; nil = no gate)
	// holds a draft that ships evals (evals/evals.json or
	// evals/evals.yaml) to them: it is promoted only when with_skill's
	// mean pass rate on the run's model is at least this, and waits for
	// a person otherwise. A draft without evals goes by its tier alone.
	ForgeMinPassRate *float64
	// EvalDraft runs a draft's evals for that gate (nil: they cannot run,
	// and such a draft waits for a person). The caller provides it
	// because the evals run as a batch of runs, which this package and
	// run lie below; what it decides with is the recorded gate.
	EvalDraft DraftEvaluator
	// Discovery configures discover_skills and install_skill: the skill
	// indexes they search (NAME=URL), the sources an install may come
	// from (URL prefixes, directories), the approval tier up to which an
	// installed skill goes live at once ("" = low), and where fetched
	// indexes are kept.
	// LearnedFrom makes this a reflection on that run (harness reflect):
	// the skills it proposes name it in their history.
	LearnedFrom      string
	SkillSources     []string
	TrustedSources   []string
	ApproveInstalled string
	IndexCache       string
	// ReloadCreated adds a skill the run promoted to the run's own
	// registry (a registry.delta event), so that it can load it later in
	// the same run; without it the run keeps its start snapshot.
	ReloadCreated bool
	// SnapshotCache is a directory keeping resource digests by stat
	// fingerprint between runs ("" = none): a file unchanged since the
	// last snapshot of the same roots is not read again. Performance
	// only: the snapshot is byte for byte what an uncached one is.
	SnapshotCache string
	// EmbeddingCache is where skill vectors are kept between runs ("" = no
	// cache). Performance only.
	EmbeddingCache string
	// Protect are further host paths the tools never touch, besides the
	// run directories and a cassette being recorded: a pipeline's own
	// records, for example.
	Protect []string
	// Skills are preloaded in this order (duplicates dropped).
	Skills []string
	// Prompt is the operator's task. PromptSource says where it came from
	// ("flag", "file:<path>", "stdin") for the manifest.
	Prompt       string
	PromptSource string

	Model string
	// Tiers map the model tiers a skill asks for (metadata.harness.tier:
	// light, standard, heavy, vision) to models, as TIER=MODEL: a child
	// run started with such a skill, or a pipeline phase naming a tier,
	// runs on that model. standard is Model unless mapped; vision is a
	// model the operator vouches can see, and a vision skill without one
	// is refused.
	Tiers []string
	// Prices are MODEL=IN/OUT, per million input and output tokens: the
	// cost per model and in total in result.json (none without them).
	Prices []string
	// FallbackModel takes over when Model fails with an outage after its
	// retries (recorded; transport, like the retries themselves).
	FallbackModel string
	// BaseURL of the OpenAI-compatible API ("" = the provider default).
	BaseURL string
	// APIKey authenticates to the provider. It is never written anywhere.
	APIKey string

	// AllowTools enables write and side-effect tools by name; read tools are
	// always available.
	AllowTools []string
	// AllowCommands are the commands run_command may run (--allow-command):
	// an exact argv ("go test ./...") or a prefix ending in "*" ("npm run
	// *"); run_command needs both the tool and at least one.
	AllowCommands []string
	// CommandCache is a directory run_command's toolchains share as their
	// cache across calls and runs (Go's build and module caches, npm's);
	// "" gives each call its own, gone with it. Performance only.
	CommandCache string
	// CommandGrant is a file with the fields of a skill's permission
	// manifest that bounds what run_command's executions may touch
	// ("": the whole workspace, no network, no environment).
	CommandGrant string

	// NoSkillCatalog withholds the load_skill catalog: only preloaded skills
	// reach the model. CatalogBudget bounds the catalog in characters
	// (0 = skills.DefaultCatalogBudget).
	NoSkillCatalog bool
	CatalogBudget  int
	// AllowSkillScripts are the exact skill:scripts/path pairs that
	// run_skill_script may execute (it also needs --allow-tool
	// run_skill_script). Sandbox is auto, bwrap, landlock or none
	// ("" = auto).
	AllowSkillScripts []string
	Sandbox           string
	// ScriptMemoryLimit caps the memory of one script call in bytes
	// (0 = scripts.DefaultMemory).
	ScriptMemoryLimit uint64
	// WasmMemoryLimit caps a WebAssembly script's linear memory in bytes
	// (0 = scripts.DefaultWasmMemory).
	WasmMemoryLimit uint64
	// MCPConfig is the operator's MCP server file (mcpServers shape), its
	// servers started as the operator's own programs. PassEnv are
	// environment names a server may take from harness's environment;
	// MCPToolEffects are key__tool=effect choices (every MCP tool is a
	// side effect otherwise). An MCP tool is offered only when AllowTools
	// names it (key__tool or key__*).
	MCPConfig string
	PassEnv   []string
	// ReadOnly are further host paths tools and skill code may read but
	// never write (--protect), besides git's directory, .harness and the
	// skill roots; AllowProtectedWrite lifts that for paths inside these
	// (--allow-protected-write).
	ReadOnly            []string
	AllowProtectedWrite []string
	// ConfirmTools are tool names or globs (KEY__*) whose calls wait for a
	// person (--confirm-tool); calls of a skill marked
	// metadata.harness.destructive wait too.
	ConfirmTools []string

	MCPToolEffects []string
	// AllowNetwork are host[:port] entries a skill's scripts and servers
	// may reach through harness's egress proxy, when the skill declares
	// the host too (metadata.harness.permissions.network). Empty: no
	// skill has network.
	AllowNetwork []string
	// CFCMode is disabled, observe, enforce-explicit or enforce-strict
	// ("" = enforce-explicit). PromptRole is the operator prompt's role:
	// direct-command, context or quote ("" = direct-command).
	CFCMode    string
	PromptRole string
	// FailOnDenial ends the run (exit 5) at the first policy denial.
	FailOnDenial bool
	// AllowUnmediated shows the model output of scripts run without a
	// harness sandbox (--sandbox none), which enforce modes withhold.
	AllowUnmediated bool
	// HonorAllowedTools lets active skills' allowed-tools narrow (never
	// widen) the tools the model may call.
	HonorAllowedTools bool
	// TrustSkills are skills the operator vouches for despite critical
	// content findings (enforce-strict refuses to activate them otherwise).
	TrustSkills []string
	// SkipEligibility preloads a skill even when this machine does not
	// meet its declared requirements.
	SkipEligibility bool
	// AllowDrift lets skill files that changed since the snapshot be used,
	// marked as drifted, instead of refused.
	AllowDrift bool

	// Generation parameters, part of the run identity and of the cassette
	// key (nil and zero: the provider's default, not sent).
	Temperature         *float64
	TopP                *float64
	Seed                *int64
	MaxCompletionTokens int64
	Stop                []string
	ReasoningEffort     string
	ExtraBody           []byte

	// OutputSchema is a JSON Schema (the document) the final answer must
	// match; the model may answer again SchemaRetries times after being
	// told what is wrong. AllowEmptyAnswer accepts an answer with no text.
	OutputSchema     []byte
	SchemaRetries    int
	AllowEmptyAnswer bool
	// Attach are files whose content reaches the model as labelled context
	// (a launcher hands one phase's output to the next this way).
	Attach []string

	MaxTurns  int           // 0 = unlimited (the CLI default is 50)
	Timeout   time.Duration // wall clock for the whole run; 0 = none
	MaxTokens int64         // total tokens; 0 = unlimited
	// MaxToolCallsPerTurn bounds the calls of one answer that run (0 =
	// DefaultMaxToolCallsPerTurn; there is no unbounded setting).
	MaxToolCallsPerTurn int

	// ArtifactsDir holds run directories ("" = .harness/runs under the
	// invocation directory). RunID names this run's directory ("" = a new
	// time-sortable id).
	ArtifactsDir string
	RunID        string

	// Transport to the model: RequestTimeout bounds one request (0 = 5m),
	// MaxRetries the retries of a transient failure, RetryMaxWait one wait.
	// They change how the run reaches the model, not what it asks: they
	// are not part of its identity, and a resume sets its own.
	RequestTimeout time.Duration
	MaxRetries     *int
	RetryMaxWait   time.Duration
	// Stream asks for streamed responses.
	Stream bool
	// WireAPI is the protocol the model is reached with: loop.WireChat
	// ("" too) or loop.WireResponses. It is part of the run's identity:
	// the two do not carry the same conversation.
	WireAPI string

	// Outputs are where the caller delivers the result and the answer
	// (absolute paths); recorded with the run so that a resume delivers
	// them too, and no part of what the run is.
	Outputs record.Outputs
	Record  string // cassette to record model exchanges into
	Replay  string // cassette to serve model responses from (no network, no key)

	// Sources maps each option name (the flag's name) to where its value
	// came from: "flag", "env", "config" or "default"; a list that
	// combines its sources (confirm-tool) names each that gave an entry,
	// joined by "+" ("config+flag").
	Sources map[string]string
	// ConfigFile is the config file that was read (--config,
	// $HARNESS_CONFIG or the user's own), if any.
	ConfigFile string

	// Profiles is a YAML file of subagent profiles for delegate_task.
	Profiles string

	// RunKey (HARNESS_RUN_KEY) seals the run directory: every journal line
	// and run.json carry an HMAC under it. It is never written anywhere.
	RunKey []byte

	// OnEvent receives every journal line once it is durable, with the
	// depth of the run that wrote it (0 for this run, 1 for its children):
	// the CLI renders it for people or streams it as --json.
	OnEvent func(line []byte, depth int)
	// Stderr receives the run's own notices (nil = none).
	Stderr io.Writer
	// Now is the clock (nil = time.Now); tests pin it.
	Now func() time.Time
	// Version is the harness version, part of the run identity.
	Version string

	// mcpFile is the --mcp-config file as read at the start of this
	// invocation (by Check, or by ReadMCPFile on resume).
	mcpFile *MCPFile
	// commandGrant is the --command-grant file as read.
	commandGrant *commandGrant
}
