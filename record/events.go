package record

import (
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
)

// RunCreated is the data of run.created, the journal's first event: the
// inputs as the run was started with them. The chain covers it, so resume
// takes the inputs from here and holds run.json to them.
type RunCreated struct {
	RunID   string  `json:"runId"`
	Inputs  Inputs  `json:"inputs"`
	Sources Sources `json:"sources"`
	// Outputs are where the run delivers its result for a job; recorded
	// here, in the chained journal, so a resume writes only where the run
	// was told to.
	Outputs *Outputs `json:"outputs,omitempty"`
}

// Outputs are the files a CI job reads after a run (--result-file,
// --output-last-message), absolute. They are where a run's outcome goes,
// not what the run is: no part of its identity.
type Outputs struct {
	ResultFile  string `json:"resultFile,omitempty"`
	LastMessage string `json:"lastMessage,omitempty"`
}

// RunStarted is the data of the run.started event. Messages is the seeded
// conversation (system prompt, skill context, task), from which resume
// rebuilds the context together with later events.
type RunStarted struct {
	RunID    string           `json:"runId"`
	Identity artifacts.Digest `json:"identity"`
	// Sealed is the whole identity, which resume recomputes and compares.
	Sealed   Identity       `json:"sealedIdentity"`
	Model    string         `json:"model"`
	Tools    []string       `json:"tools"`
	Messages []loop.Message `json:"messages"`
	// Token frames skill context; resume needs it to frame skills loaded
	// later the same way.
	Token string `json:"token,omitempty"`
}

// RunResumed is the data of the run.resumed event.
type RunResumed struct {
	Segment        int    `json:"segment"`
	PreviousStatus string `json:"previousStatus"`
	TornBytes      int    `json:"tornBytes,omitempty"`
	Limits         Limits `json:"limits"`
}

// RunContinued is the data of the run.continued event: a follow-up
// instruction the operator gave a run that had succeeded (harness
// continue), as the model reads it, with the prompt role it carries.
type RunContinued struct {
	Segment      int              `json:"segment"`
	Message      string           `json:"message"`
	PromptDigest artifacts.Digest `json:"promptDigest"`
	Role         string           `json:"role"`
}

// RunFinished is the data of the run.finished event.
type RunFinished struct {
	Segment   int             `json:"segment"`
	Status    string          `json:"status"`
	ExitCode  int             `json:"exitCode"`
	Reason    string          `json:"reason,omitempty"`
	Resumable bool            `json:"resumable"`
	Error     *outcome.Record `json:"error,omitempty"`
	// Result is result.json's content.
	Result *Result `json:"result,omitempty"`
	// PolicySnapshot is the digest of policy-snapshot.json as the segment
	// ended (with the skills the model loaded during it); each decision
	// names the snapshot in force when it was made.
	PolicySnapshot artifacts.Digest `json:"policySnapshot,omitempty"`
}

// RegistrySnapshotted is the data of the registry.snapshotted event.
// FileDigest is of skill-registry.json's bytes, which resume checks.
type RegistrySnapshotted struct {
	Digest      artifacts.Digest `json:"digest"`
	FileDigest  artifacts.Digest `json:"fileDigest"`
	Skills      int              `json:"skills"`
	Diagnostics int              `json:"diagnostics"`
}

// SkillSkipped is the data of skill.skipped: a profile named a skill the
// registry lacks.
type SkillSkipped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ToolOutputRestored is the data of tool.output.restored: resume found a
// tool output of a segment that never ended missing or not the file the
// journal describes (a power cut came before the file's deferred fsync),
// and wrote it again from the bytes its tool.finished line carries.
type ToolOutputRestored struct {
	Output       string           `json:"output"`
	OutputDigest artifacts.Digest `json:"outputDigest"`
	// Found is what was there: "missing" or "different".
	Found string `json:"found"`
}

// The loop's own events and records (see the package comment).
type (
	ModelRequest   = loop.ModelRequestEvent
	ModelResponse  = loop.ModelResponseEvent
	ToolStarted    = loop.ToolStartedEvent
	ToolFinished   = loop.ToolFinishedEvent
	LimitReached   = loop.LimitReachedEvent
	ToolOutput     = loop.ToolOutput
	ModelRetry     = loop.Attempt
	AnswerRejected = loop.AnswerRejectedEvent
)
