// Package eval measures what a skill does for a model: each eval's prompt
// run with the skill preloaded and without it (and with an older version,
// on several models, over epochs), each run graded by harness's own checks
// and by a grader model for expectations in words, and the numbers put
// side by side with their spread. The runs are one batch (package
// pipeline); an eval directory is verified as a batch is before any of it
// is read.
package eval

import (
	"github.com/harness-dev/harness/artifacts"
)

// Suite is a skill's evals as harness reads them: skill-creator's
// evals/evals.json as published, or harness's own YAML form with checks,
// and the trigger queries of evals/triggers.json.
type Suite struct {
	SkillName string
	// SkillDir is the skill's directory (absolute); eval files name
	// their inputs relative to it.
	SkillDir string
	// File is the eval file read ("" when there are only triggers), and
	// Digest the digest of its bytes.
	File   string
	Digest artifacts.Digest
	Evals  []Eval
	// TriggersFile, TriggersDigest and Triggers are the trigger queries.
	TriggersFile   string
	TriggersDigest artifacts.Digest
	Triggers       []Trigger
}

// Eval is one task of a suite.
type Eval struct {
	// ID is skill-creator's integer id written in decimal, or the YAML
	// form's id: the cells' ids start with it.
	ID             string
	Name           string
	Prompt         string
	ExpectedOutput string
	// Files are inputs relative to the skill directory, copied into each
	// cell's workspace under the same relative path.
	Files        []string
	Expectations []string
	Checks       []Check
	// Line is where the eval starts in its file, for messages.
	Line int
}

// Trigger is one should-trigger or should-not-trigger query.
type Trigger struct {
	Query         string
	ShouldTrigger bool
}

// Check is one programmatic check of the YAML form: exactly one of its
// kinds is set. None needs a model.
type Check struct {
	AnswerEquals   *string `json:"answer-equals,omitempty"`
	AnswerContains *string `json:"answer-contains,omitempty"`
	AnswerMatches  *string `json:"answer-matches,omitempty"`
	// AnswerSchema is a JSON Schema file, relative to the eval file.
	AnswerSchema string `json:"answer-schema,omitempty"`

	// File is a workspace path checked after the run with one of Exists,
	// Contains, Matches or Schema.
	File     string  `json:"file,omitempty"`
	Exists   *bool   `json:"exists,omitempty"`
	Contains *string `json:"contains,omitempty"`
	Matches  *string `json:"matches,omitempty"`
	Schema   string  `json:"schema,omitempty"`

	// Command runs in the cell's workspace in the sandbox after the run,
	// through run_command's rules: it must be allowed by the eval's
	// --allow-command patterns (and --command-grant); it passes when it
	// exits 0.
	Command []string `json:"command,omitempty"`

	ToolCalled    string `json:"tool-called,omitempty"`
	ToolNotCalled string `json:"tool-not-called,omitempty"`
	SkillLoaded   string `json:"skill-loaded,omitempty"`

	MaxTurns  *int     `json:"max-turns,omitempty"`
	MaxTokens *int64   `json:"max-tokens,omitempty"`
	MaxCost   *float64 `json:"max-cost,omitempty"`

	// schemaBytes is AnswerSchema's or Schema's file, read at load.
	schemaBytes []byte
}
