package run

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// journalState is a stopped run rebuilt from its verified journal.
type journalState struct {
	created   record.RunCreated
	started   bool
	sealed    record.Identity
	token     string
	messages  []loop.Message
	progress  loop.Progress
	toolOrder []loop.ToolStartedEvent
	finished  map[string]bool
	decisions []record.TraceRecord
	activated []record.Activation
	// createdSkills are drafts of this run the store took.
	createdSkills []record.SkillCreated
	deltas        []record.RegistryDelta
	// mcpServers are the last start of each MCP server, by key.
	mcpServers map[string]record.MCPServerEvent
	snapshot   *record.RegistrySnapshotted
	lastSeq    int64
	resumes    int
	head       artifacts.Digest
	tornBytes  int
	validSize  int64
	// openTail is the first journal line of a segment that never ended
	// (0 if the last one ended): only its tool outputs can have missed
	// their deferred fsync, so only they may be restored from the journal.
	openTail int
	// restored are those outputs, to be written again by resume.
	restored []restoredOutput
	// approvalsRequested are calls that waited for a person, by call id;
	// approvalsDecided what a person decided of them.
	approvalsRequested map[string]record.ApprovalRequested
	approvalsDecided   map[string]record.ApprovalDecided
	approvalOrder      []string
	// finishedEvent is the last run.finished.
	finishedEvent *record.RunFinished
}

// restoredOutput is a tool output rebuilt from its tool.finished line.
type restoredOutput struct {
	record.ToolOutputRestored
	data []byte
}

// tampered is the refusal for a run directory that is not what the run
// wrote: edited, forged, or pointing outside itself.
func tampered(format string, args ...any) error {
	return outcome.Policy("run_dir_tampered", "the run directory was changed after harness wrote it: "+format+"; nothing was run. Start the run again, or check the directory with `harness verify`", args...)
}

// verifyRun checks a run directory before resume trusts any of it: the
// journal is one unbroken chain (sealed with key, when given), run.json's
// inputs and identity are the ones the journal recorded, a segment that
// ended ends the journal, and every file the journal refers to is the file
// it wrote, read from inside the directory. It returns the run rebuilt
// from the journal alone.
func verifyRun(dir string, m record.Manifest, key []byte) (*journalState, error) {
	switch {
	case m.Seal != nil && len(key) == 0:
		return nil, outcome.Policy("run_dir_sealed", "run %s is sealed: set HARNESS_RUN_KEY to the key it was written with to verify and resume it", m.RunID)
	case m.Seal == nil && len(key) > 0:
		return nil, tampered("HARNESS_RUN_KEY is set but run.json carries no seal (it was written without the key, or the seal was removed)")
	case m.Seal != nil:
		want, err := sealManifest(m, key)
		if err != nil {
			return nil, err
		}
		if !hmac.Equal([]byte(want.Mac), []byte(m.Seal.Mac)) || want.JournalHead != m.Seal.JournalHead {
			return nil, tampered("run.json's seal does not verify with HARNESS_RUN_KEY")
		}
	}
	p := filepath.Join(dir, record.FileJournal)
	f, err := os.Open(p)
	if err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s has no journal: %v", dir, err)
	}
	c, err := artifacts.ReadJournal(f)
	f.Close()
	if err != nil {
		if errors.Is(err, artifacts.ErrJournalCorrupt) {
			return nil, outcome.Policy("journal_corrupt", "%s: %v; the run cannot be resumed safely", p, err)
		}
		return nil, err
	}
	head, err := artifacts.VerifyChain(c.Events, key)
	if err != nil {
		return nil, tampered("%v", err)
	}
	st := &journalState{finished: map[string]bool{}, approvalsRequested: map[string]record.ApprovalRequested{}, approvalsDecided: map[string]record.ApprovalDecided{}, tornBytes: c.TornBytes, validSize: c.ValidSize, head: head}
	if len(c.Events) == 0 {
		return nil, outcome.Usage("run_not_started", "run %s stopped before its journal recorded anything: nothing ran, so there is nothing to resume; start it again with `harness run`", m.RunID)
	}
	if c.Events[0].Type != record.EventRunCreated {
		return nil, tampered("the journal does not begin with run.created")
	}
	if err := json.Unmarshal(c.Events[0].Data, &st.created); err != nil {
		return nil, tampered("journal line 1 (run.created): %v", err)
	}
	if field := differingInput(st.created, m); field != "" {
		return nil, tampered("run.json's %s is not what the journal recorded when the run was created", field)
	}
	if err := checkEnd(c.Events, m, head); err != nil {
		return nil, err
	}
	if m.Status == outcome.StatusRunning {
		st.openTail = 1
		for i, ev := range c.Events {
			if ev.Type == record.EventRunFinished {
				st.openTail = i + 2
			}
		}
	}
	for i, ev := range c.Events {
		if err := st.apply(dir, i+1, ev); err != nil {
			return nil, err
		}
	}
	if st.started {
		if st.sealed.Digest == "" || !sameJSON(st.sealed, m.Identity) {
			return nil, tampered("run.json's identity is not the one the journal sealed at run.started")
		}
	}
	if err := checkResult(dir, m, st.finishedEvent); err != nil {
		return nil, err
	}
	return st, nil
}

// checkResult holds result.json to the result the journal's last
// run.finished carries, once the run ended: what CI reads is what the run
// recorded. A result.json that is missing is refused too; one older than
// the end (a crash between the two writes) leaves run.json running.
func checkResult(dir string, m record.Manifest, end *record.RunFinished) error {
	if m.Status == outcome.StatusRunning || end == nil || end.Result == nil {
		return nil
	}
	data, err := artifacts.ReadBeneath(dir, record.FileResult)
	if err != nil {
		return tampered("result.json cannot be read (%v); the journal recorded the run's result", err)
	}
	var got record.Result
	if err := json.Unmarshal(data, &got); err != nil || !sameJSON(&got, end.Result) {
		return tampered("result.json is not the result the journal recorded at the run's end")
	}
	return nil
}

// apply takes one verified event into the rebuilt run.
func (st *journalState) apply(dir string, line int, ev artifacts.Event) error {
	bad := func(err error) error { return tampered("journal line %d (%s): %v", line, ev.Type, err) }
	st.lastSeq = ev.Seq
	switch ev.Type {
	case record.EventRunStarted:
		var d record.RunStarted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.started, st.token, st.messages, st.sealed = true, d.Token, d.Messages, d.Sealed
	case record.EventRunResumed:
		st.resumes++
		if !st.started {
			// The stopped segment never started its loop, so this one
			// preloads afresh and its activations replace those.
			st.activated = nil
		}
	case record.EventRegistrySnapshotted:
		var d record.RegistrySnapshotted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.snapshot = &d
	case record.EventSkillActivated:
		var a record.Activation
		if err := json.Unmarshal(ev.Data, &a); err != nil {
			return bad(err)
		}
		st.activated = append(st.activated, a)
	case record.EventRegistryDelta:
		var d record.RegistryDelta
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.deltas = append(st.deltas, d)
	case record.EventMCPServerStarted:
		var d record.MCPServerEvent
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if st.mcpServers == nil {
			st.mcpServers = map[string]record.MCPServerEvent{}
		}
		st.mcpServers[d.Key] = d
	case record.EventSkillCreated:
		var c record.SkillCreated
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return bad(err)
		}
		st.createdSkills = append(st.createdSkills, c)
	case record.EventPolicyDecision:
		var d record.PolicyDecision
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.decisions = append(st.decisions, record.TraceRecord{Turn: d.Turn, CallID: d.CallID, At: ev.Time, SnapshotDigest: d.SnapshotDigest, Decision: d.Decision})
	case record.EventModelResponse:
		var d record.ModelResponse
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		msg := loop.Message{Role: loop.RoleAssistant, Content: d.Content}
		if len(d.ToolCalls) > 0 {
			msg.ToolCalls = d.ToolCalls
		}
		st.messages = append(st.messages, msg)
		st.progress.Turns++
		st.progress.Usage = st.progress.Usage.Add(d.Usage)
		st.progress.TurnUsage = append(st.progress.TurnUsage, d.Usage)
	case record.EventAnswerRejected:
		var d record.AnswerRejected
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.messages = append(st.messages, loop.Message{Role: loop.RoleUser, Content: d.Message})
		st.progress.Rejections++
	case record.EventRunFinished:
		var d record.RunFinished
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.finishedEvent = &d
	case record.EventApprovalRequested:
		var d record.ApprovalRequested
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if _, again := st.approvalsRequested[d.CallID]; !again {
			st.approvalOrder = append(st.approvalOrder, d.CallID)
		}
		st.approvalsRequested[d.CallID] = d
	case record.EventApprovalDecided:
		var d record.ApprovalDecided
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if _, ok := st.approvalsRequested[d.CallID]; !ok {
			return bad(fmt.Errorf("approval.decided for call %s, which never waited for approval", d.CallID))
		}
		st.approvalsDecided[d.CallID] = d
	case record.EventToolStarted:
		var d record.ToolStarted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.toolOrder = append(st.toolOrder, d)
	case record.EventToolFinished:
		var d record.ToolFinished
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		data, err := artifacts.ReadBeneath(dir, filepath.FromSlash(d.Output))
		if r, ok := st.restorable(line, d, data, err); ok {
			st.restored = append(st.restored, r)
			data, err = r.data, nil
		}
		if err != nil {
			return bad(fmt.Errorf("tool output %s: %w", d.Output, err))
		}
		if got := artifacts.DigestBytes(data); got != d.OutputDigest {
			return bad(fmt.Errorf("tool output %s is not the file harness wrote (digest %s, journal %s)", d.Output, got, d.OutputDigest))
		}
		var out record.ToolOutput
		if err := artifacts.DecodeArtifact(data, record.TypeToolOutput, record.Version, &out); err != nil {
			return bad(fmt.Errorf("tool output %s: %w", d.Output, err))
		}
		if out.CallID != d.CallID {
			return bad(fmt.Errorf("tool output %s belongs to call %s, not %s", d.Output, out.CallID, d.CallID))
		}
		st.finished[d.CallID] = true
		st.messages = append(st.messages, loop.Message{Role: loop.RoleTool, Content: out.Content, ToolCallID: d.CallID})
	}
	return nil
}

// restorable reports whether the tool output of a tool.finished line is to
// be rebuilt from the line: the file is missing or is not the one the line
// describes, the line carries the file's bytes (their digest is the one
// recorded), and the line belongs to a segment that never ended, the only
// place where a power cut can have come between the line's fsync and the
// file's. Anything else (a link, an ended segment's file changed) stays
// the refusal it was.
func (st *journalState) restorable(line int, d record.ToolFinished, data []byte, readErr error) (restoredOutput, bool) {
	found := ""
	switch {
	case errors.Is(readErr, fs.ErrNotExist):
		found = "missing"
	case readErr == nil && artifacts.DigestBytes(data) != d.OutputDigest:
		found = "different"
	default:
		return restoredOutput{}, false
	}
	if st.openTail == 0 || line < st.openTail || d.OutputBytes == "" || artifacts.DigestString(d.OutputBytes) != d.OutputDigest || !isToolOutputPath(d.Output) {
		return restoredOutput{}, false
	}
	return restoredOutput{ToolOutputRestored: record.ToolOutputRestored{Output: d.Output, OutputDigest: d.OutputDigest, Found: found}, data: []byte(d.OutputBytes)}, true
}

// isToolOutputPath is the only form of path the loop writes an output
// under: one file name inside tool-outputs/.
func isToolOutputPath(p string) bool {
	name, ok := strings.CutPrefix(p, record.DirToolOutputs+"/")
	return ok && name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// checkEnd holds run.json's account of how the last segment ended to the
// journal: a segment that ended (any status but running) ended the
// journal with its run.finished, and run.json recorded that line as the
// head. Lines after it were not written by the run.
func checkEnd(events []artifacts.Event, m record.Manifest, head artifacts.Digest) error {
	last := events[len(events)-1]
	if m.Status == outcome.StatusRunning {
		// A crash: the segment's tail has no run.finished. The head
		// recorded at the previous segment's end must still be in the chain.
		if m.JournalHead == "" {
			return nil
		}
		for _, ev := range events {
			if artifacts.DigestBytes(ev.Raw) == m.JournalHead {
				return nil
			}
		}
		return tampered("run.json's journal head %s is not a line of the journal", m.JournalHead)
	}
	if last.Type != record.EventRunFinished {
		return tampered("run.json says the run ended (%s), but the journal goes on after its last run.finished (line %d is %s)", m.Status, last.Seq, last.Type)
	}
	var fin record.RunFinished
	if err := json.Unmarshal(last.Data, &fin); err != nil || fin.Status != m.Status {
		return tampered("run.json's status %s is not the status the journal ended with (%s)", m.Status, fin.Status)
	}
	if m.JournalHead != head {
		return tampered("run.json's journal head is not the journal's last line")
	}
	return nil
}

// differingInput names the first part of run.json's inputs that is not
// what run.created recorded. Tools and the probed sandbox are filled in
// after creation; they are recomputed on resume, not trusted.
func differingInput(created record.RunCreated, m record.Manifest) string {
	a, b := created.Inputs, m.Inputs
	a.Tools, b.Tools = nil, nil
	a.Sandbox, b.Sandbox = requestedOnly(a.Sandbox), requestedOnly(b.Sandbox)
	if created.RunID != m.RunID {
		return "run id"
	}
	var am, bm map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	json.Unmarshal(ja, &am)
	json.Unmarshal(jb, &bm)
	keys := make([]string, 0, len(am)+len(bm))
	for k := range am {
		keys = append(keys, k)
	}
	for k := range bm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if !bytes.Equal(am[k], bm[k]) {
			return "inputs." + k
		}
	}
	if !sameJSON(created.Sources, m.Sources) {
		return "sources"
	}
	return ""
}

func requestedOnly(s *record.SandboxRecord) *record.SandboxRecord {
	if s == nil {
		return nil
	}
	return &record.SandboxRecord{Requested: s.Requested}
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// registry is the run-start snapshot, read from the run directory and held
// to the digest the journal recorded for it.
func (st *journalState) registry(dir string) (*skills.Registry, error) {
	if st.snapshot == nil {
		return nil, tampered("%s exists but the journal recorded no snapshot", record.FileRegistry)
	}
	data, err := artifacts.ReadBeneath(dir, record.FileRegistry)
	if err != nil {
		return nil, tampered("%s: %v", record.FileRegistry, err)
	}
	if got := artifacts.DigestBytes(data); got != st.snapshot.FileDigest {
		return nil, tampered("%s is not the snapshot the run took (digest %s, journal %s)", record.FileRegistry, got, st.snapshot.FileDigest)
	}
	reg, err := skills.DecodeRegistry(data)
	if err != nil {
		return nil, tampered("%s: %v", record.FileRegistry, err)
	}
	return reg, nil
}

// activations are the skills the journal says were activated; the file
// must agree with it.
func (st *journalState) activations(dir string) (record.Activations, error) {
	rec := record.Activations{Envelope: artifacts.NewEnvelope(record.TypeActivations, record.Version), Activations: append([]record.Activation{}, st.activated...)}
	data, err := artifacts.ReadBeneath(dir, record.FileActivations)
	if err != nil {
		return rec, tampered("%s: %v", record.FileActivations, err)
	}
	var file record.Activations
	if err := artifacts.DecodeArtifact(data, record.TypeActivations, record.Version, &file); err != nil {
		return rec, tampered("%s: %v", record.FileActivations, err)
	}
	if !sameJSON(file.Activations, rec.Activations) {
		return rec, tampered("%s lists activations the journal does not record", record.FileActivations)
	}
	return rec, nil
}

// sealManifest computes run.json's seal: an HMAC-SHA256 under the run key
// of the manifest with its seal's mac empty. The journal head in it ties
// the seal to every journal line.
func sealManifest(m record.Manifest, key []byte) (*record.Seal, error) {
	m.Seal = &record.Seal{Algorithm: "hmac-sha256", JournalHead: m.JournalHead}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("harness.run-seal/1\x00"))
	mac.Write(b)
	m.Seal.Mac = hex.EncodeToString(mac.Sum(nil))
	return m.Seal, nil
}

// expectEnvironment compares what the operator's environment says (the
// workspace, the prompt's role), when given, with what the run recorded.
func expectEnvironment(in record.Inputs, ro ResumeOptions) error {
	if ro.ExpectWorkspace != "" {
		ws, err := resolveWorkspace(ro.ExpectWorkspace)
		if err != nil {
			return err
		}
		if ws != in.Workspace.Host {
			return outcome.Policy("workspace_mismatch", "--workspace %s resolves to %s, but the run's workspace is %s: this is not that run's workspace", ro.ExpectWorkspace, ws, in.Workspace.Host)
		}
	}
	if ro.ExpectPromptRole != "" && ro.ExpectPromptRole != in.PromptRole {
		return outcome.Policy("prompt_role_mismatch", "--prompt-role %s, but the run's prompt role is %s", ro.ExpectPromptRole, in.PromptRole)
	}
	return nil
}
