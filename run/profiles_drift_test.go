package run

import (
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

// TestResumeReportsProfilesDrift: a subagent profile that names other
// skills after the stop changes what delegate_task would start; like the
// operator's other policy files, its content is part of the run's policy,
// and a resume that would start children from an edited file is drift.
func TestResumeReportsProfilesDrift(t *testing.T) {
	ws := subagentWorkspace(t)
	dir := stoppedRun(t, ws, subagentOptions(ws))
	edited := strings.Replace(profilesYAML, "skills: [notes]", "skills: [docs]", 1)
	testenv.Must(t, os.WriteFile(filepath.Join(ws, "profiles.yaml"), []byte(edited), 0o644))
	if fields := driftFields(refusedDrift(t, dir, "test")); !strings.Contains(fields, "policyDigest") {
		t.Errorf("drift report names %q, want policyDigest", fields)
	}
}

// TestChildrenShareTheProfilesRead: a child that may delegate further is
// handed the profiles its parent read, not the file as it is later: the
// file is swapped for an invalid one before the parent's first request,
// and the child still starts, recording the parent's digest.
func TestChildrenShareTheProfilesRead(t *testing.T) {
	ws := subagentWorkspace(t)
	lead := "profiles:\n  - name: lead\n    description: Leads.\n    allowedTools: [delegate_task]\n    maxDepth: 1\n    maxTurns: 3\n"
	file := filepath.Join(ws, "lead.yaml")
	testenv.Must(t, os.WriteFile(file, []byte(lead), 0o644))
	replies := []looptest.Reply{
		call1("d1", "delegate_task", `{"profile":"lead","task":"Say hi."}`),
		{Content: "hi from the lead"},
	}
	_, dir, _ := converse(t, ws, replies, func(o *Options) {
		o.AllowTools, o.Profiles = []string{"delegate_task"}, file
	}, func() {
		testenv.Must(t, os.WriteFile(file, []byte("profiles: [not valid"), 0o644))
	})
	var parent, child record.Manifest
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FileManifest), record.TypeManifest, record.Version, &parent))
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.DirChildren, "d1", record.FileManifest), record.TypeManifest, record.Version, &child))
	if want := artifacts.DigestString(lead); parent.Inputs.ProfilesDigest != want || child.Inputs.ProfilesDigest != want {
		t.Errorf("profiles digests: parent %s, child %s; want both %s", parent.Inputs.ProfilesDigest, child.Inputs.ProfilesDigest, want)
	}
	if child.Status != outcome.StatusSucceeded {
		t.Errorf("child %s: %+v", child.Status, child.Error)
	}
}
