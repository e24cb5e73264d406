package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop/looptest"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// stoppedRun runs until the turn limit stops it after one turn, with the
// notes skill preloaded, and returns its directory.
func stoppedRun(t *testing.T, ws string, mutate func(*Options)) string {
	t.Helper()
	srv := looptest.New([]looptest.Reply{call1("l1", "list_files", `{}`)})
	t.Cleanup(srv.Close)
	o := baseOptions(ws)
	o.BaseURL, o.APIKey, o.RunID, o.MaxTurns = srv.URL, "sk-test", "stopped", 1
	if mutate != nil {
		mutate(&o)
	}
	res, err := Run(context.Background(), o)
	if outcome.ExitCode(err) != outcome.ExitLimit {
		t.Fatalf("first segment: %v, want the turn limit", err)
	}
	return res.RunDir
}

// refusedDrift resumes dir and expects a drift refusal; it returns the
// drift report.
func refusedDrift(t *testing.T, dir, version string) record.DriftReport {
	t.Helper()
	_, err := Resume(context.Background(), ResumeOptions{RunDir: dir, MaxTurns: "+5", APIKey: "sk-test", Now: fixedClock, Version: version})
	if e := outcome.As(err); e.Exit != outcome.ExitPolicy || e.Code != "drift_detected" {
		t.Fatalf("resume: %v, want a drift refusal", err)
	}
	var rep record.DriftReport
	if err := artifacts.ReadJSON(filepath.Join(dir, record.FileDrift), record.TypeDrift, record.Version, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func driftFields(rep record.DriftReport) string {
	var fs []string
	for _, it := range rep.Identity {
		fs = append(fs, it.Field)
	}
	return strings.Join(fs, ",")
}

func TestResumeRefusesHarnessVersionDrift(t *testing.T) {
	dir := stoppedRun(t, demoWorkspace(t), nil)
	rep := refusedDrift(t, dir, "test-2")
	if !strings.Contains(driftFields(rep), "harnessVersion") {
		t.Errorf("drift report names %q, want harnessVersion", driftFields(rep))
	}
}

// TestResumeRefusesEditedPolicy: run.json's inputs are held to the ones
// the journal recorded at run.created; a policy written into run.json
// after the stop is refused as tampering, never restored.
func TestResumeRefusesEditedPolicy(t *testing.T) {
	dir := stoppedRun(t, demoWorkspace(t), nil)
	p := filepath.Join(dir, record.FileManifest)
	b, _ := os.ReadFile(p)
	b = []byte(strings.Replace(string(b), `"mode": "enforce-explicit"`, `"mode": "disabled"`, 1))
	testenv.Must(t, os.WriteFile(p, b, 0o644))
	_, err := Resume(context.Background(), ResumeOptions{RunDir: dir, MaxTurns: "+5", APIKey: "sk-test", Now: fixedClock, Version: "test"})
	if e := outcome.As(err); e.Code != "run_dir_tampered" || !strings.Contains(e.Msg, "inputs.cfc") {
		t.Fatalf("resume: %v, want run_dir_tampered naming inputs.cfc", err)
	}
}

// TestResumeReportsResourceDrift: a changed reference of an active skill
// is named file by file, not only as a changed skill.
func TestResumeReportsResourceDrift(t *testing.T) {
	ws := demoWorkspace(t)
	dir := stoppedRun(t, ws, nil)
	testenv.Must(t, os.WriteFile(filepath.Join(ws, "skills/notes/references/guide.md"), []byte("Be verbose.\n"), 0o644))
	testenv.Must(t, os.Remove(filepath.Join(ws, "skills/notes/references/extra.md")))
	rep := refusedDrift(t, dir, "test")
	got := map[string]string{}
	for _, d := range rep.Resources {
		got[d.Skill+"/"+d.Path] = d.Change
	}
	if got["notes/references/guide.md"] != "changed" || got["notes/references/extra.md"] != "removed" {
		t.Errorf("resource drift = %v, want guide.md changed and extra.md removed", got)
	}
}
