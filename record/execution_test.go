package record

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// The executions' fields as they were written out one by one, before
// ProcessOutcome held the ones they share: the JSON of both must not
// change with it.
type oldScriptExecution struct {
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

type oldCommandExecution struct {
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

// TestProcessOutcomeKeepsTheJSON marshals a script and a command
// execution with every field set, and with none, through the types as they
// were and as they are. A command execution's bytes are the same; a
// script execution's keys and values are, two of them in another order
// (outputDigest before processLimit), which no reader of JSON sees.
func TestProcessOutcomeKeepsTheJSON(t *testing.T) {
	code, yes := 3, true
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	outcomeFields := func(v reflect.Value) {
		v.FieldByName("ExitCode").Set(reflect.ValueOf(&code))
		v.FieldByName("Signal").SetString("killed")
		v.FieldByName("StdoutBytes").SetInt(10)
		v.FieldByName("StderrBytes").SetInt(11)
		v.FieldByName("Truncated").SetBool(true)
		v.FieldByName("OutputDigest").Set(reflect.ValueOf(artifacts.Digest("blake3:ab")))
		v.FieldByName("ProcessLimit").SetString("pids-cgroup")
		v.FieldByName("ForkRefusals").SetInt(2)
		v.FieldByName("MemoryLimit").SetString("memory-cgroup")
		v.FieldByName("MemoryLimitBytes").SetUint(1 << 20)
		v.FieldByName("RunAs").SetString("uid:65534")
	}
	oldScript := oldScriptExecution{
		Type: TypeScriptExecution, OutputID: "c1", RunID: "r", SkillName: "s", Path: "scripts/x.sh", Status: "executed",
		TimeoutMs: 5, TimeoutBy: "skill", ExecutedAt: at, DurationMs: 7, ExecutionTarget: "sandbox", SandboxBackend: "bwrap",
		Runtime: "bash", Network: &NetworkGrant{}, Grant: &Grant{}, FilesWritten: []string{"a"},
		WriteRefusals: []outcome.Record{{Code: "c", Message: "m"}}, Argv: []string{"bash"}, Args: []string{"1"}, Cwd: "d",
		ResourcePath: "p", SandboxResourcePath: "sp", RegistryDigest: "blake3:01", ObservedDigest: "blake3:02",
		DigestMatchesRegistry: &yes, Diagnostics: []skills.Diagnostic{}, Error: &outcome.Record{Code: "e", Message: "m"},
		NotUndone: []string{".git/hooks"},
	}
	outcomeFields(reflect.ValueOf(&oldScript).Elem())
	oldCommand := oldCommandExecution{
		Type: TypeCommandExecution, OutputID: "c2", RunID: "r", Argv: []string{"go", "test"}, Pattern: "go test *", Cwd: "d",
		Status: "executed", StdinBytes: 4, TimeoutMs: 5, ExecutedAt: at, DurationMs: 7, ExecutionTarget: "sandbox",
		SandboxBackend: "bwrap", Grant: &Grant{}, Error: &outcome.Record{Code: "e", Message: "m"}, NotUndone: []string{".git/config"},
	}
	outcomeFields(reflect.ValueOf(&oldCommand).Elem())

	for _, tc := range []struct {
		name      string
		old       any
		now       any
		sameBytes bool
	}{
		{"script, every field", oldScript, &ScriptExecution{}, false},
		{"script, no field", oldScriptExecution{}, &ScriptExecution{}, false},
		{"command, every field", oldCommand, &CommandExecution{}, true},
		{"command, no field", oldCommandExecution{}, &CommandExecution{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := json.Marshal(tc.old)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(before, tc.now); err != nil {
				t.Fatal(err)
			}
			after, err := json.Marshal(tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sameBytes && !bytes.Equal(before, after) {
				t.Fatalf("JSON changed:\nbefore %s\nafter  %s", before, after)
			}
			var b, a map[string]any
			if err := json.Unmarshal(before, &b); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(after, &a); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("JSON changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
