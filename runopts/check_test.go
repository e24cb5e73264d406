package runopts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/outcome"
)

func valid() Options {
	return Options{Prompt: "do it", Model: "m", APIKey: "sk-test"}
}

// TestCheckRefuses holds each refusal to its stable code and to the
// usage exit, and the first mistake to be the one reported.
func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	badMCP := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(badMCP, []byte(`{"mcpServers": {"x": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		code   string
		mutate func(*Options)
	}{
		{"prompt_empty", func(o *Options) { o.Prompt = "  " }},
		{"skill_requires_root", func(o *Options) { o.Skills = []string{"a"} }},
		{"model_missing", func(o *Options) { o.Model = "" }},
		{"cassette_conflict", func(o *Options) { o.Record, o.Replay = "a", "b" }},
		{"api_key_missing", func(o *Options) { o.APIKey = "" }},
		{"limit_invalid", func(o *Options) { o.MaxTurns = -1 }},
		{"sandbox_invalid", func(o *Options) { o.Sandbox = "docker" }},
		{"cfc_mode_invalid", func(o *Options) { o.CFCMode = "lenient" }},
		{"prompt_role_invalid", func(o *Options) { o.PromptRole = "boss" }},
		{"reload_created_unused", func(o *Options) { o.ReloadCreated = true }},
		{"forge_min_pass_rate_unused", func(o *Options) { v := 0.8; o.ForgeMinPassRate = &v }},
		{"forge_min_pass_rate_invalid", func(o *Options) {
			v := 1.5
			o.AllowTools, o.SkillsRoots, o.ForgeMinPassRate = []string{"create_skill"}, []string{"/ws/skills"}, &v
		}},
		{"profiles_missing", func(o *Options) { o.AllowTools = []string{"delegate_task"} }},
		{"temperature_invalid", func(o *Options) { v := 3.0; o.Temperature = &v }},
		{"extra_body_invalid", func(o *Options) { o.ExtraBody = []byte(`[1]`) }},
		{"output_schema_invalid", func(o *Options) { o.OutputSchema = []byte(`{`) }},
		{"base_url_invalid", func(o *Options) { o.BaseURL = "ftp://x" }},
		{"tool_unknown", func(o *Options) { o.AllowTools = []string{"shell"} }},
		{"wire_api_invalid", func(o *Options) { o.WireAPI = "soap" }},
		{"wire_api_param", func(o *Options) { o.WireAPI, o.Stop = "responses", []string{"END"} }},
		{"skill_source_unused", func(o *Options) { o.SkillSources = []string{"team=https://x/index.json"} }},
		{"skill_source_invalid", func(o *Options) {
			o.AllowTools, o.SkillSources = []string{"discover_skills"}, []string{"local=https://x/index.json"}
		}},
		{"skill_source_missing", func(o *Options) { o.AllowTools, o.SkillsRoots = []string{"install_skill"}, []string{"/ws/skills"} }},
		{"approve_installed_invalid", func(o *Options) {
			o.AllowTools, o.SkillSources, o.ApproveInstalled = []string{"install_skill"}, []string{"team=https://x/i.json"}, "high"
		}},
		{"pass_env_refused", func(o *Options) { o.PassEnv = []string{"HARNESS_API_KEY"} }},
		{"allow_network_invalid", func(o *Options) { o.AllowNetwork = []string{"http://x/"} }},
		{"mcp_config_unreadable", func(o *Options) { o.MCPConfig = filepath.Join(dir, "missing.json") }},
		{"mcp_config_invalid", func(o *Options) { o.MCPConfig = badMCP }},
		{"confirm_tool_unknown", func(o *Options) { o.ConfirmTools = []string{"write_fle"} }},
		{"confirm_tool_unknown", func(o *Options) { o.ConfirmTools = []string{"write_file", "delete_*"} }},
		{"confirm_tool_invalid", func(o *Options) { o.ConfirmTools = []string{"write_[f"} }},
		{"confirm_tool_invalid", func(o *Options) { o.ConfirmTools = []string{""} }},
	} {
		t.Run(tc.code, func(t *testing.T) {
			o := valid()
			tc.mutate(&o)
			err := Check(&o, false)
			var e *outcome.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Exit != outcome.ExitUsage {
				t.Fatalf("Check = %v, want usage error %s", err, tc.code)
			}
		})
	}
}

// TestCheckTakesConfirmToolsThatName: a built-in name, a glob matching
// one, and an MCP tool (whose KEY the run checks once it knows the
// servers) pass the option check.
func TestCheckTakesConfirmToolsThatName(t *testing.T) {
	for _, p := range []string{"write_file", "write_*", "*", "run_command", "deploy__*", "srv__delete", "*__delete*"} {
		o := valid()
		o.ConfirmTools = []string{p}
		if err := Check(&o, false); err != nil {
			t.Errorf("--confirm-tool %s: %v", p, err)
		}
	}
}

func TestCheckSettlesDefaults(t *testing.T) {
	o := valid()
	o.APIKey = ""
	o.Skills = []string{"a", "b", "a"}
	o.SkillsRoots = []string{"skills"}
	o.ExtraBody = []byte("{ \"top_k\" : 20 }")
	if err := Check(&o, true); err != nil {
		t.Fatalf("a run handed a model needs no key: %v", err)
	}
	if o.Sandbox != "auto" || o.CFCMode != "enforce-explicit" || o.PromptRole != "direct-command" {
		t.Errorf("defaults = %q %q %q", o.Sandbox, o.CFCMode, o.PromptRole)
	}
	if len(o.Skills) != 2 || string(o.ExtraBody) != `{"top_k":20}` {
		t.Errorf("skills %v, extra body %s: want duplicates dropped and JSON compacted", o.Skills, o.ExtraBody)
	}
}

// TestPolicyDigestCountsTheMCPFileByContent: the same name with other
// content is another policy.
func TestPolicyDigestCountsTheMCPFileByContent(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mcp.json")
	digest := func(content string) string {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		o := valid()
		o.MCPConfig = f
		if err := Check(&o, false); err != nil {
			t.Fatal(err)
		}
		return string(o.PolicyDigest(nil))
	}
	a := digest(`{"mcpServers": {"a": {"command": "a"}}}`)
	if b := digest(`{"mcpServers": {"b": {"command": "b"}}}`); a == b {
		t.Error("an edited --mcp-config file kept the policy digest")
	}
}

// TestPolicyDigestCountsTheForgeGate: a gate that can hold a draft back
// from going live is policy, and so is its bound.
func TestPolicyDigestCountsTheForgeGate(t *testing.T) {
	digest := func(gate *float64) string {
		o := valid()
		o.AllowTools, o.SkillsRoots, o.ForgeMinPassRate = []string{"create_skill"}, []string{"/ws/skills"}, gate
		if err := Check(&o, false); err != nil {
			t.Fatal(err)
		}
		return string(o.PolicyDigest(nil))
	}
	low, high := 0.5, 0.8
	if digest(&low) == digest(&high) || digest(nil) == digest(&low) {
		t.Error("--forge-min-pass-rate is not in the policy digest")
	}
}
