// Package reflection turns a finished run into the material for a skill:
// the run is verified, refused unless it succeeded on the skills it
// started with, and its task, tool calls and answer are written out
// (redacted, bounded) for a model asked whether a reusable procedure was
// followed. What the model proposes goes through SkillForge like any
// draft; this package only decides what it may read.
package reflection

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

// Bounds on what the model is given of a run.
const (
	maxArgument   = 2000
	maxTask       = 8000
	maxAnswer     = 8000
	maxTranscript = 64 << 10
)

// Prompt is the operator's instruction to the reflecting model; the run it
// studies comes attached, as context.
const Prompt = `Study the attached record of a finished agent run: its task, the tool calls it made in order, and its answer.
Decide whether it followed a procedure that would help with similar tasks again. If it did, propose one skill with create_skill:
a short name, a description that says what it does and when to use it, a body with the steps, the permissions its scripts need (none if it has no scripts),
and tests for any script. If it did not, answer "no reusable procedure" and say why in one sentence.`

// Source is a run reflection may study.
type Source struct {
	RunID     string
	Dir       string
	Manifest  record.Manifest
	Messages  []loop.Message
	Workspace string
	Roots     []string
}

// Open verifies the run directory with the one verifier and refuses a run
// reflection must not learn from: one that did not succeed, or that went
// on with skills changed under it (--allow-drift).
func Open(dir string, key []byte) (*Source, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s: %v", dir, err)
	}
	m, err := rundir.ReadManifest(abs)
	if err != nil {
		return nil, err
	}
	st, err := rundir.Open(abs, m, key)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Status != outcome.StatusSucceeded:
		return nil, outcome.Usage("reflect_not_succeeded", "run %s %s: only a run that succeeded is reflected on (a failed one teaches the wrong procedure)", m.RunID, m.Status)
	case m.Inputs.AllowDrift || driftAllowed(abs):
		return nil, outcome.Policy("reflect_drifted", "run %s went on with skills that changed under it (--allow-drift): what it did cannot be tied to the skills it recorded, so it is not reflected on", m.RunID)
	}
	src := &Source{RunID: m.RunID, Dir: abs, Manifest: m, Messages: st.Messages, Workspace: m.Inputs.Workspace.Host}
	for _, r := range m.Inputs.SkillsRoots {
		src.Roots = append(src.Roots, r.Host)
	}
	return src, nil
}

// driftAllowed reports whether a resume of the run went on despite drift.
func driftAllowed(dir string) bool {
	var rep record.DriftReport
	data, err := artifacts.ReadBeneath(dir, record.FileDrift)
	if err != nil {
		return false
	}
	return json.Unmarshal(data, &rep) == nil && rep.Drift && rep.Allowed
}

// Transcript is what the reflecting model reads of the run: the task, the
// tool calls in order, and the answer, each bounded, with every secret
// the redactor knows taken out. It names no run id or time, so a
// recording of the reflection replays for every run that did the same.
func (s *Source) Transcript(redact *artifacts.Redactor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# A finished run\n\n## Task\n\n%s\n\n## Tool calls, in order\n\n", bound(redact.String(s.Manifest.Inputs.Prompt), maxTask))
	n := 0
	var answer string
	for _, m := range s.Messages {
		if m.Role != loop.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			n++
			fmt.Fprintf(&b, "%d. %s %s\n", n, c.Name, bound(redact.String(c.Arguments), maxArgument))
		}
		if len(m.ToolCalls) == 0 {
			answer = m.Content
		}
	}
	if n == 0 {
		b.WriteString("(none)\n")
	}
	fmt.Fprintf(&b, "\n## Answer\n\n%s\n", bound(redact.String(answer), maxAnswer))
	return bound(b.String(), maxTranscript)
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[... %d more bytes left out]", len(s)-cut)
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// Write keeps the transcript where the reflection run can attach it, and
// a resume of that run find it again: DIR/reflections/run-DIGEST.md, named
// by its content (the model sees the name), so that two runs that did
// the same are the same reflection.
func (s *Source) Write(dir string, redact *artifacts.Redactor) (string, error) {
	text := s.Transcript(redact)
	name := strings.TrimPrefix(string(artifacts.DigestString(text)), "blake3:")[:16]
	p := filepath.Join(dir, "reflections", "run-"+name+".md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, artifacts.WriteFile(p, []byte(text), 0o644)
}
