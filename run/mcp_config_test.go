package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// TestMCPConfigSwappedDuringRun: the operator's --mcp-config is replaced
// after the run has checked it. Every record of the file (run.json's
// inputs, the policy snapshot, mcp-servers.json) and the server actually
// started must come from the same bytes, the ones checked; before, the
// file was read again for each, so the servers started could be ones the
// records never described.
func TestMCPConfigSwappedDuringRun(t *testing.T) {
	server := testenv.BuildProgram(t, "mcp/testdata/mcpserver", "", "")
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{
		"skills/notes/SKILL.md": "---\nname: notes\ndescription: Notes. Use to test.\n---\nBody.\n",
	})
	config := filepath.Join(t.TempDir(), "mcp.json")
	checked := `{"mcpServers":{"op":{"command":"` + server + `"}}}`
	// The swapped file gives the same server an extra tool.
	swapped := `{"mcpServers":{"op":{"command":"` + server + `","env":{"MCPSERVER_EXTRA":"1"}}}}`
	testenv.Must(t, os.WriteFile(config, []byte(checked), 0o644))

	_, dir, reqs := converse(t, ws, nil, func(o *Options) {
		o.MCPConfig, o.AllowTools, o.Sandbox = config, []string{"op__*"}, "none"
	}, func() {
		testenv.Must(t, os.WriteFile(config, []byte(swapped), 0o644))
	})

	want := artifacts.DigestString(checked)
	var m record.Manifest
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FileManifest), record.TypeManifest, record.Version, &m))
	if m.Inputs.MCPConfigDigest != want {
		t.Errorf("run.json records config %s, want the checked file's %s", m.Inputs.MCPConfigDigest, want)
	}
	var ps record.PolicySnapshot
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FilePolicySnapshot), record.TypePolicySnapshot, record.Version, &ps))
	if ps.MCP == nil || ps.MCP.ConfigDigest != want {
		t.Errorf("policy snapshot records config %+v, want the checked file's %s", ps.MCP, want)
	}
	var servers record.MCPServers
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FileMCPServers), record.TypeMCPServers, record.Version, &servers))
	if len(servers.Servers) != 1 {
		t.Fatalf("mcp-servers.json lists %d servers, want 1", len(servers.Servers))
	}
	s := servers.Servers[0]
	if s.ConfigDigest != want {
		t.Errorf("mcp-servers.json records config %s, want the checked file's %s", s.ConfigDigest, want)
	}
	if slices.Contains(s.EnvNames, "MCPSERVER_EXTRA") {
		t.Errorf("the server was started from the swapped file: env %v", s.EnvNames)
	}
	for _, tool := range s.Tools {
		if tool.Name == "extra" {
			t.Errorf("the server offers the swapped file's extra tool")
		}
	}
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
}

// TestResumeMCPConfigChanged: on resume the operator's file is read
// once, like the run read it. Edited after the stop, it is policy drift;
// removed, the resume is refused before any server would start.
func TestResumeMCPConfigChanged(t *testing.T) {
	server := testenv.BuildProgram(t, "mcp/testdata/mcpserver", "", "")
	stopped := func(t *testing.T) (dir, config string) {
		config = filepath.Join(t.TempDir(), "mcp.json")
		testenv.Must(t, os.WriteFile(config, []byte(`{"mcpServers":{"op":{"command":"`+server+`"}}}`), 0o644))
		return stoppedRun(t, demoWorkspace(t), func(o *Options) {
			o.MCPConfig, o.AllowTools, o.Sandbox = config, []string{"op__*"}, "none"
		}), config
	}
	t.Run("edited", func(t *testing.T) {
		dir, config := stopped(t)
		testenv.Must(t, os.WriteFile(config, []byte(`{"mcpServers":{"op":{"command":"`+server+`","env":{"MCPSERVER_EXTRA":"1"}}}}`), 0o644))
		if fields := driftFields(refusedDrift(t, dir, "test")); !strings.Contains(fields, "policyDigest") {
			t.Errorf("drift report names %q, want policyDigest", fields)
		}
	})
	t.Run("removed", func(t *testing.T) {
		dir, config := stopped(t)
		testenv.Must(t, os.Remove(config))
		_, err := Resume(context.Background(), ResumeOptions{RunDir: dir, MaxTurns: "+5", APIKey: "sk-test", Now: fixedClock, Version: "test"})
		if e := outcome.As(err); e.Exit != outcome.ExitUsage || e.Code != "mcp_config_unreadable" {
			t.Fatalf("resume: %v, want mcp_config_unreadable", err)
		}
		var m record.Manifest
		testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FileManifest), record.TypeManifest, record.Version, &m))
		if m.Error == nil || m.Error.Code != "mcp_config_unreadable" {
			t.Errorf("run.json error %+v, want mcp_config_unreadable recorded", m.Error)
		}
	})
}
