package record

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// Settings are the `harness run` settings a pipeline phase or a batch task
// takes from outside its own fields: a file's `defaults`, or the command
// line that starts the pipeline or batch. Each key is the flag's name, so a
// setting is spelled the same in a file, on the command line and in
// HARNESS_* variables. A field left out (nil, "") is not set, which lets a
// layer be laid over another: a pointer tells "false" and "0" from unset.
//
// Paths in a file are relative to the file; on the command line, to the
// directory harness was started in (pipeline.json keeps them absolute).
type Settings struct {
	Model              string   `json:"model,omitempty"`
	BaseURL            string   `json:"base-url,omitempty"`
	Workspace          string   `json:"workspace,omitempty"`
	SkillsRoot         []string `json:"skills-root,omitempty"`
	ExternalSkillsRoot []string `json:"external-skills-root,omitempty"`
	EmbeddingModel     string   `json:"embedding-model,omitempty"`

	// Limits.
	MaxTurns  *int   `json:"max-turns,omitempty"`
	MaxTokens *int64 `json:"max-tokens,omitempty"`
	Timeout   string `json:"timeout,omitempty"`

	// The model and the connection to it.
	FallbackModel       string          `json:"fallback-model,omitempty"`
	Tier                []string        `json:"tier,omitempty"`
	Price               []string        `json:"price,omitempty"`
	Stream              *bool           `json:"stream,omitempty"`
	WireAPI             string          `json:"wire-api,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top-p,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	MaxCompletionTokens *int64          `json:"max-completion-tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	ReasoningEffort     string          `json:"reasoning-effort,omitempty"`
	ExtraBody           json.RawMessage `json:"extra-body,omitempty"`
	RequestTimeout      string          `json:"request-timeout,omitempty"`
	MaxRetries          *int            `json:"max-retries,omitempty"`
	RetryMaxWait        string          `json:"retry-max-wait,omitempty"`
	SchemaRetries       *int            `json:"schema-retries,omitempty"`
	AllowEmptyAnswer    *bool           `json:"allow-empty-answer,omitempty"`

	// The skill catalog and the skills a unit may create.
	CatalogBudget   *int   `json:"catalog-budget,omitempty"`
	NoSkillCatalog  *bool  `json:"no-skill-catalog,omitempty"`
	SkipEligibility *bool  `json:"skip-eligibility,omitempty"`
	Profiles        string `json:"profiles,omitempty"`
	ApproveCreated  string `json:"approve-created,omitempty"`
	ReloadCreated   *bool  `json:"reload-created,omitempty"`
	ForgeRoot       string `json:"forge-root,omitempty"`
	Store           string `json:"store,omitempty"`

	// Sandbox and what skill code may reach.
	Sandbox             string   `json:"sandbox,omitempty"`
	ScriptMemoryLimit   string   `json:"script-memory-limit,omitempty"`
	WasmMemoryLimit     string   `json:"wasm-memory-limit,omitempty"`
	MCPConfig           string   `json:"mcp-config,omitempty"`
	PassEnv             []string `json:"pass-env,omitempty"`
	MCPToolEffect       []string `json:"mcp-tool-effect,omitempty"`
	Protect             []string `json:"protect,omitempty"`
	AllowProtectedWrite []string `json:"allow-protected-write,omitempty"`

	// Policy.
	CFCMode            string   `json:"cfc-mode,omitempty"`
	PromptRole         string   `json:"prompt-role,omitempty"`
	FailOnDenial       *bool    `json:"fail-on-denial,omitempty"`
	CFCAllowUnmediated *bool    `json:"cfc-allow-unmediated,omitempty"`
	HonorAllowedTools  *bool    `json:"honor-allowed-tools,omitempty"`
	TrustSkill         []string `json:"trust-skill,omitempty"`
}

// SettingKeys are the keys of Settings, sorted: what a file's defaults
// may hold, each a flag of harness run.
func SettingKeys() []string {
	var keys []string
	rt := reflect.TypeFor[Settings]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	slices.Sort(keys)
	return keys
}
