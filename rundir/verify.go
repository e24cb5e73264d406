package rundir

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// State is a stopped run rebuilt from its verified journal.
type State struct {
	Created   record.RunCreated
	Started   bool
	Sealed    record.Identity
	Token     string
	Messages  []loop.Message
	Progress  loop.Progress
	ToolOrder []loop.ToolStartedEvent
	Finished  map[string]bool
	Decisions []record.TraceRecord
	Activated []record.Activation
	// createdSkills are drafts of this run the store took.
	CreatedSkills []record.SkillCreated
	Deltas        []record.RegistryDelta
	// mcpServers are the last start of each MCP server, by key.
	MCPServers map[string]record.MCPServerEvent
	Snapshot   *record.RegistrySnapshotted
	LastSeq    int64
	Resumes    int
	Head       artifacts.Digest
	TornBytes  int
	ValidSize  int64
	// openTail is the first journal line of a segment that never ended
	// (0 if the last one ended): only its tool outputs can have missed
	// their deferred fsync, so only they may be restored from the journal.
	OpenTail int
	// restored are those outputs, to be written again by resume.
	Restored []RestoredOutput
	// approvalsRequested are calls that waited for a person, by call id;
	// approvalsDecided what a person decided of them.
	ApprovalsRequested map[string]record.ApprovalRequested
	ApprovalsDecided   map[string]record.ApprovalDecided
	ApprovalOrder      []string
	// FollowUps are the operator's follow-up instructions (run.continued),
	// as the model read them.
	FollowUps []string
	// FollowUpLimits are the limits the last follow-up was given (those of
	// the run.resumed that opened its segment), nil when there was none:
	// a plain resume of that follow-up keeps its budget, not the run's.
	FollowUpLimits *record.Limits
	// resumedLimits are the limits of the last run.resumed.
	resumedLimits record.Limits
	// lines are the digests of every line of the verified journal.
	lines map[artifacts.Digest]bool
	// Children are the parent's last record of each delegate_task child,
	// by its directory (children/<id>).
	Children map[string]record.ChildEnded
	// finishedEvent is the last run.finished.
	FinishedEvent *record.RunFinished
	// segmentDecisions is where the last segment's decisions begin in
	// Decisions: those name the policy snapshot the segment wrote.
	segmentDecisions int
	// segmentActivations is how many skills were active at the last
	// segment's first decision: those its policy snapshot was taken with.
	segmentActivations int
}

// RestoredOutput is a tool output rebuilt from its tool.finished line.
type RestoredOutput struct {
	record.ToolOutputRestored
	Data []byte
}

// tampered is the refusal for a run directory that is not what the run
// wrote: edited, forged, or pointing outside itself.
func tampered(format string, args ...any) error {
	return outcome.Policy("run_dir_tampered", "the run directory was changed after harness wrote it: "+format+"; nothing was run. Start the run again, or check the directory with `harness verify`", args...)
}

// Open checks a run directory before resume trusts any of it: the
// journal is one unbroken chain (sealed with key, when given), run.json's
// inputs and identity are the ones the journal recorded, a segment that
// ended ends the journal, and every file the journal refers to is the file
// it wrote, read from inside the directory. It returns the run rebuilt
// from the journal alone.
func Open(dir string, m record.Manifest, key []byte) (*State, error) {
	return open(dir, m, key, 0)
}

// open is Open of a run directory depth levels of children below the one
// asked for.
func open(dir string, m record.Manifest, key []byte, depth int) (*State, error) {
	switch {
	case m.Seal != nil && len(key) == 0:
		return nil, outcome.Policy("run_dir_sealed", "run %s is sealed: set HARNESS_RUN_KEY to the key it was written with to verify and resume it", m.RunID)
	case m.Seal == nil && len(key) > 0:
		return nil, tampered("HARNESS_RUN_KEY is set but run.json carries no seal (it was written without the key, or the seal was removed)")
	case m.Seal != nil:
		want, err := Seal(m, key)
		if err != nil {
			return nil, err
		}
		if !hmac.Equal([]byte(want.Mac), []byte(m.Seal.Mac)) || want.JournalHead != m.Seal.JournalHead {
			return nil, tampered("run.json's seal does not verify with HARNESS_RUN_KEY")
		}
	}
	p := filepath.Join(dir, record.FileJournal)
	f, err := openFile(dir, record.FileJournal, os.O_RDONLY, 0)
	var refused *outcome.Error
	if errors.As(err, &refused) {
		return nil, err
	}
	if err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s has no journal: %v", dir, err)
	}
	c, err := readJournal(f, m.Status)
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
	st := &State{Finished: map[string]bool{}, ApprovalsRequested: map[string]record.ApprovalRequested{}, ApprovalsDecided: map[string]record.ApprovalDecided{}, TornBytes: c.TornBytes, ValidSize: c.ValidSize, Head: head}
	if len(c.Events) == 0 {
		return nil, outcome.Usage("run_not_started", "run %s stopped before its journal recorded anything: nothing ran, so there is nothing to resume; start it again with `harness run`", m.RunID)
	}
	if c.Events[0].Type != record.EventRunCreated {
		return nil, tampered("the journal does not begin with run.created")
	}
	if err := json.Unmarshal(c.Events[0].Data, &st.Created); err != nil {
		return nil, tampered("journal line 1 (run.created): %v", err)
	}
	if field := differingInput(st.Created, m); field != "" {
		return nil, tampered("run.json's %s is not what the journal recorded when the run was created", field)
	}
	if err := checkEnd(c.Events, m, head); err != nil {
		return nil, err
	}
	if m.Status == outcome.StatusRunning {
		st.OpenTail = 1
		for i, ev := range c.Events {
			if ev.Type == record.EventRunFinished {
				st.OpenTail = i + 2
			}
		}
	}
	for i, ev := range c.Events {
		if err := st.apply(dir, i+1, ev); err != nil {
			return nil, err
		}
	}
	if st.Started {
		if st.Sealed.Digest == "" || !sameJSON(st.Sealed, m.Identity) {
			return nil, tampered("run.json's identity is not the one the journal sealed at run.started")
		}
	}
	if err := checkResult(dir, m, st.FinishedEvent); err != nil {
		return nil, err
	}
	if err := st.checkPolicy(dir, m); err != nil {
		return nil, err
	}
	if err := st.checkChildren(dir, key, depth); err != nil {
		return nil, err
	}
	st.lines = lineDigests(c.Events, head)
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
	if errors.Is(err, artifacts.ErrOutsideDir) {
		return linked(record.FileResult)
	}
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
func (st *State) apply(dir string, line int, ev artifacts.Event) error {
	bad := func(err error) error { return tampered("journal line %d (%s): %v", line, ev.Type, err) }
	st.LastSeq = ev.Seq
	switch ev.Type {
	case record.EventRunStarted:
		var d record.RunStarted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.Started, st.Token, st.Messages, st.Sealed = true, d.Token, d.Messages, d.Sealed
	case record.EventRunContinued:
		var d record.RunContinued
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.Messages = append(st.Messages, loop.Message{Role: loop.RoleUser, Content: d.Message})
		st.FollowUps = append(st.FollowUps, d.Message)
		l := st.resumedLimits
		st.FollowUpLimits = &l
	case record.EventRunResumed:
		var d record.RunResumed
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.resumedLimits = d.Limits
		st.Resumes++
		st.segmentDecisions = len(st.Decisions)
		if !st.Started {
			// The stopped segment never started its loop, so this one
			// preloads afresh and its activations replace those.
			st.Activated = nil
		}
	case record.EventRegistrySnapshotted:
		var d record.RegistrySnapshotted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.Snapshot = &d
	case record.EventSkillActivated:
		var a record.Activation
		if err := json.Unmarshal(ev.Data, &a); err != nil {
			return bad(err)
		}
		st.Activated = append(st.Activated, a)
	case record.EventRegistryDelta:
		var d record.RegistryDelta
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.Deltas = append(st.Deltas, d)
	case record.EventMCPServerStarted:
		var d record.MCPServerEvent
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if st.MCPServers == nil {
			st.MCPServers = map[string]record.MCPServerEvent{}
		}
		st.MCPServers[d.Key] = d
	case record.EventSkillCreated:
		var c record.SkillCreated
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return bad(err)
		}
		st.CreatedSkills = append(st.CreatedSkills, c)
	case record.EventPolicyDecision:
		var d record.PolicyDecision
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if len(st.Decisions) == st.segmentDecisions {
			st.segmentActivations = len(st.Activated)
		}
		st.Decisions = append(st.Decisions, record.TraceRecord{Turn: d.Turn, CallID: d.CallID, At: ev.Time, SnapshotDigest: d.SnapshotDigest, Decision: d.Decision})
	case record.EventModelResponse:
		var d record.ModelResponse
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		msg := loop.Message{Role: loop.RoleAssistant, Content: d.Content}
		if len(d.ToolCalls) > 0 {
			msg.ToolCalls = d.ToolCalls
		}
		// Reasoning items go back to the provider as they are: bytes
		// that are not those the journal digested are refused.
		for _, it := range d.ReasoningItems {
			if err := it.Check(); err != nil {
				return bad(err)
			}
		}
		msg.Reasoning = d.ReasoningItems
		st.Messages = append(st.Messages, msg)
		st.Progress.Turns++
		st.Progress.Usage = st.Progress.Usage.Add(d.Usage)
		st.Progress.TurnUsage = append(st.Progress.TurnUsage, d.Usage)
	case record.EventAnswerRejected:
		var d record.AnswerRejected
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.Messages = append(st.Messages, loop.Message{Role: loop.RoleUser, Content: d.Message})
		st.Progress.Rejections++
	case record.EventRunFinished:
		var d record.RunFinished
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.FinishedEvent = &d
	case record.EventApprovalRequested:
		var d record.ApprovalRequested
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if _, again := st.ApprovalsRequested[d.CallID]; !again {
			st.ApprovalOrder = append(st.ApprovalOrder, d.CallID)
		}
		st.ApprovalsRequested[d.CallID] = d
	case record.EventApprovalDecided:
		var d record.ApprovalDecided
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if _, ok := st.ApprovalsRequested[d.CallID]; !ok {
			return bad(fmt.Errorf("approval.decided for call %s, which never waited for approval", d.CallID))
		}
		st.ApprovalsDecided[d.CallID] = d
	case record.EventChildEnded:
		var d record.ChildEnded
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		if err := st.takeChild(d); err != nil {
			return bad(err)
		}
	case record.EventToolStarted:
		var d record.ToolStarted
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		st.ToolOrder = append(st.ToolOrder, d)
	case record.EventToolFinished:
		var d record.ToolFinished
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return bad(err)
		}
		data, err := artifacts.ReadBeneath(dir, filepath.FromSlash(d.Output))
		if r, ok := st.restorable(line, d, data, err); ok {
			st.Restored = append(st.Restored, r)
			data, err = r.Data, nil
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
		st.Finished[d.CallID] = true
		st.Messages = append(st.Messages, loop.Message{Role: loop.RoleTool, Content: out.Content, ToolCallID: d.CallID})
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
func (st *State) restorable(line int, d record.ToolFinished, data []byte, readErr error) (RestoredOutput, bool) {
	found := ""
	switch {
	case errors.Is(readErr, fs.ErrNotExist):
		found = "missing"
	case readErr == nil && artifacts.DigestBytes(data) != d.OutputDigest:
		found = "different"
	default:
		return RestoredOutput{}, false
	}
	if st.OpenTail == 0 || line < st.OpenTail || d.OutputBytes == "" || artifacts.DigestString(d.OutputBytes) != d.OutputDigest || !isToolOutputPath(d.Output) {
		return RestoredOutput{}, false
	}
	return RestoredOutput{ToolOutputRestored: record.ToolOutputRestored{Output: d.Output, OutputDigest: d.OutputDigest, Found: found}, Data: []byte(d.OutputBytes)}, true
}

// isToolOutputPath is the only form of path the loop writes an output
// under: one file name inside tool-outputs/.
func isToolOutputPath(p string) bool {
	name, ok := strings.CutPrefix(p, record.DirToolOutputs+"/")
	return ok && name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// registry is the run-start snapshot, read from the run directory and held
// to the digest the journal recorded for it.
func (st *State) Registry(dir string) (*skills.Registry, error) {
	if st.Snapshot == nil {
		return nil, tampered("%s exists but the journal recorded no snapshot", record.FileRegistry)
	}
	data, err := artifacts.ReadBeneath(dir, record.FileRegistry)
	if err != nil {
		return nil, tampered("%s: %v", record.FileRegistry, err)
	}
	if got := artifacts.DigestBytes(data); got != st.Snapshot.FileDigest {
		return nil, tampered("%s is not the snapshot the run took (digest %s, journal %s)", record.FileRegistry, got, st.Snapshot.FileDigest)
	}
	reg, err := skills.DecodeRegistry(data)
	if err != nil {
		return nil, tampered("%s: %v", record.FileRegistry, err)
	}
	return reg, nil
}

// activations are the skills the journal says were activated; the file
// must agree with it.
func (st *State) Activations(dir string) (record.Activations, error) {
	rec := record.Activations{Envelope: artifacts.NewEnvelope(record.TypeActivations, record.Version), Activations: append([]record.Activation{}, st.Activated...)}
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

// Seal computes run.json's seal: an HMAC-SHA256 under the run key
// of the manifest with its seal's mac empty. The journal head in it ties
// the seal to every journal line.
func Seal(m record.Manifest, key []byte) (*record.Seal, error) {
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
