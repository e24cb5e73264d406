package loop

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// checkArgs refuses arguments that are not one JSON object matching the
// tool's schema, as the model sees it.
func (e *engine) checkArgs(call ToolCall) *ToolResult {
	args := json.RawMessage(call.Arguments)
	if strings.TrimSpace(call.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		res := ErrorResult("arguments_invalid_json", fmt.Sprintf("the arguments of %s are not valid JSON; send one JSON object", call.Name), nil)
		return &res
	}
	if err := e.schemas[call.Name].validate(args); err != nil {
		res := ErrorResult("arguments_invalid", fmt.Sprintf("the arguments of %s do not match its schema: %v", call.Name, err), nil)
		return &res
	}
	return nil
}

// errorCode extracts the code of an ErrorResult's content, for the journal.
func errorCode(content string) string {
	var v struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(content), &v) != nil {
		return ""
	}
	return v.Error.Code
}

// InlineOutputMax is the largest tool output whose journal line carries
// it. Most outputs are small, and one fsync of the journal (due before
// the next model request anyway) then makes such an output durable, where
// a file of its own costs an fsync of the file and one of its directory
// per call. Larger outputs keep the file's fsync and stay out of the
// journal, which resume reads whole and --json streams.
const InlineOutputMax = 16 << 10

// writeOutput stores the full result and returns its path relative to the
// run directory, its digest, and its bytes when the journal line carries
// them (see InlineOutputMax).
func (e *engine) writeOutput(turn int, call ToolCall, res ToolResult) (string, artifacts.Digest, string, error) {
	if e.cfg.ToolOutputDir == "" {
		return "", "", "", nil
	}
	base := FileSafe(call.ID) + "-" + FileSafe(call.Name)
	name := base + ".json"
	for i := 2; e.outNames[name]; i++ {
		name = fmt.Sprintf("%s-%d.json", base, i)
	}
	e.outNames[name] = true
	rec := ToolOutput{
		Envelope: artifacts.NewEnvelope("harness.tool-output", 1),
		Turn:     turn, CallID: call.ID, Tool: call.Name, Arguments: call.Arguments,
		Status: res.Status, Content: res.Content, Record: res.Record,
	}
	data, err := e.cfg.Redact.EncodeJSON(rec)
	if err != nil {
		return "", "", "", fmt.Errorf("write tool output: %w", err)
	}
	path := filepath.Join(e.cfg.ToolOutputDir, name)
	rel := filepath.Base(e.cfg.ToolOutputDir) + "/" + name
	if len(data) <= InlineOutputMax {
		if err := artifacts.WriteUnsynced(path, 0o644, data); err != nil {
			return "", "", "", fmt.Errorf("write tool output: %w", err)
		}
		e.unsynced = append(e.unsynced, path)
		return rel, artifacts.DigestBytes(data), string(data), nil
	}
	// tool.finished, which names the file and carries its digest, is
	// written only after this returns, so the file is durable first.
	if err := artifacts.WriteUnreferenced(path, 0o644, data); err != nil {
		return "", "", "", fmt.Errorf("write tool output: %w", err)
	}
	return rel, artifacts.DigestBytes(data), "", nil
}
