package record

import (
	"time"

	"github.com/harness-dev/harness/artifacts"
)

// File and directory names in a pipeline directory. Each phase's run
// directory is phases/<name>/, a run directory like any other.
const (
	FilePipeline        = "pipeline.json"
	FilePipelineJournal = "pipeline-journal.jsonl"
	FilePipelineResult  = "pipeline-result.json"
	DirPhases           = "phases"
	// DirAnswers holds each finished phase's answer as a file
	// (answers/<name>.md), for later phases to attach.
	DirAnswers = "answers"
)

// File and directory names in a batch directory: each task's run
// directory is batch/<task-id>/.
const (
	FileBatch        = "batch.json"
	FileBatchJournal = "batch-journal.jsonl"
	FileBatchResult  = "batch-result.json"
	DirBatchRuns     = "batch"
	TypeBatch        = "harness.batch"
	TypeBatchResult  = "harness.batch-result"
	// BatchVersion is that of batch.json and batch-result.json: 2 names
	// their id batchId (1 called it pipelineId, the type they share with
	// a pipeline's files) and records paths as PipelineVersion 2 does.
	BatchVersion = 2
)

// Artifact types of a pipeline directory.
//
// PipelineVersion is the version of a pipeline or batch directory's
// manifest, result file and journal lines. Version 2 records every path
// inside the directory relative to it (a unit's run directory is
// phases/<name> or batch/<task-id>), so the directory verifies and resumes
// wherever it was copied or moved as a whole, and records each unit's run
// identity (its run id and journal head). Version 1 recorded absolute
// paths: such a directory is read only where it was written.
const (
	TypePipeline       = "harness.pipeline"
	TypePipelineResult = "harness.pipeline-result"
	PipelineVersion    = 2
)

// Pipeline journal events.
const (
	EventPipelineStarted  = "pipeline.started"
	EventPipelineResumed  = "pipeline.resumed"
	EventPipelineDrift    = "pipeline.drift"
	EventPhaseStarted     = "phase.started"
	EventPhaseFinished    = "phase.finished"
	EventPhaseSkipped     = "phase.skipped"
	EventPhaseReused      = "phase.reused"
	EventPipelineFinished = "pipeline.finished"
)

// PipelineManifest is pipeline.json (and batch.json): what the pipeline
// or batch was asked to do.
type PipelineManifest struct {
	artifacts.Envelope
	// PipelineID is a pipeline's id, BatchID a batch's: one is set (SetID).
	PipelineID     string    `json:"pipelineId,omitempty"`
	BatchID        string    `json:"batchId,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	HarnessVersion string    `json:"harnessVersion"`
	// File is the pipeline file (absolute) and FileDigest its bytes'.
	File       string            `json:"file"`
	FileDigest artifacts.Digest  `json:"fileDigest"`
	Vars       map[string]string `json:"vars"`
	// VarOverrides are the --var values given on the command line (also
	// in Vars); a resume applies them again over the file's own.
	VarOverrides map[string]string `json:"varOverrides,omitempty"`
	// MatrixOverrides are a batch's --matrix values, applied again on resume.
	MatrixOverrides map[string][]string `json:"matrixOverrides,omitempty"`
	Jobs            int                 `json:"jobs"`
	// Workspace, Record and Replay are the command line's overrides ("" =
	// none), kept so a resume runs the phases alike.
	Workspace string `json:"workspace,omitempty"`
	BaseURL   string `json:"baseUrl,omitempty"`
	Record    string `json:"record,omitempty"`
	Replay    string `json:"replay,omitempty"`
	// Settings are the run settings the command line gave every unit
	// (flags and HARNESS_* variables), SettingSources where each came
	// from; a resume lays them over the file's defaults again.
	Settings       *Settings         `json:"settings,omitempty"`
	SettingSources map[string]string `json:"settingSources,omitempty"`
	// Phases are a pipeline's phases, Tasks a batch's tasks (this shard's).
	Phases []PipelinePhase `json:"phases,omitempty"`
	Tasks  []PipelinePhase `json:"tasks,omitempty"`
	// Shard is "I/N" when a batch runs one shard of its tasks; AllTasks
	// are every task id of the file in file order, for merging shards.
	Shard    string   `json:"shard,omitempty"`
	AllTasks []string `json:"allTasks,omitempty"`
	// Digest covers the file, the vars and every phase's declaration.
	Digest artifacts.Digest `json:"digest"`
}

// PipelinePhase is one phase as the pipeline declared it.
type PipelinePhase struct {
	Name  string   `json:"name"`
	Needs []string `json:"needs"`
	// Digest is the phase's declaration with the defaults applied: what it
	// asks, before its prompt is filled in from earlier phases.
	Digest artifacts.Digest `json:"digest"`
	// RunDir is where the unit's run directory goes, relative to the
	// pipeline or batch directory (version 1: absolute).
	RunDir string `json:"runDir"`
}

// PipelineResult is pipeline-result.json (and batch-result.json): how
// every phase or task ended.
type PipelineResult struct {
	artifacts.Envelope
	// PipelineID is a pipeline's id, BatchID a batch's: one is set (SetID).
	PipelineID string `json:"pipelineId,omitempty"`
	BatchID    string `json:"batchId,omitempty"`
	// Dir is where the directory was when this file was written, and
	// ResumeCommand names it too: what a person reads, never where a
	// reader looks (a copy elsewhere keeps the text; the journal's digest
	// of this file covers it).
	Dir string `json:"dir"`
	// Status is succeeded when every phase succeeded; otherwise the status
	// of the first phase in dependency order that did not.
	Status     string      `json:"status"`
	ExitCode   int         `json:"exitCode"`
	Message    string      `json:"message,omitempty"`
	DurationMs int64       `json:"durationMs"`
	Usage      ResultUsage `json:"usage"`
	// The units' usage per model and cost, summed.
	ModelCosts
	Phases []PhaseOutcome `json:"phases,omitempty"`
	// Tasks are a batch's tasks; Counts how many ended with each status.
	Tasks  []PhaseOutcome `json:"tasks,omitempty"`
	Counts map[string]int `json:"counts,omitempty"`
	// Shards are the shard directories a merged batch result came from.
	Shards        []string `json:"shards,omitempty"`
	Resumable     bool     `json:"resumable"`
	ResumeCommand string   `json:"resumeCommand,omitempty"`
}

// PhaseOutcome is one phase's line of the pipeline result.
type PhaseOutcome struct {
	Name string `json:"name"`
	// Status is the phase run's result status, or skipped (a phase it
	// needs did not succeed) or not_started (the pipeline stopped first).
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	ExitCode int    `json:"exitCode"`
	Message  string `json:"message,omitempty"`
	// Reused marks a phase that succeeded in an earlier attempt and was
	// not run again by a resume.
	Reused bool `json:"reused,omitempty"`
	// RunDir is the unit's run directory relative to the pipeline or
	// batch directory (version 1: absolute).
	RunDir       string           `json:"runDir,omitempty"`
	ResultDigest artifacts.Digest `json:"resultDigest,omitempty"`
	// RunID and JournalHead are the identity of the unit's run as it
	// ended: its run.json's run id and the last line of its journal. A
	// run directory swapped for another run's, which verifies on its own,
	// is not this one.
	RunID        string           `json:"runId,omitempty"`
	JournalHead  artifacts.Digest `json:"journalHead,omitempty"`
	DurationMs   int64            `json:"durationMs"`
	Usage        ResultUsage      `json:"usage"`
	UsageByModel []ModelUsage     `json:"usageByModel,omitempty"`
	// AnswerDigest is the digest of answers/<name>.md as written: the
	// file a later phase is handed is checked against it when read.
	AnswerDigest artifacts.Digest `json:"answerDigest,omitempty"`
	// PendingApprovals are the unit's calls waiting for a person (status
	// awaiting_approval).
	PendingApprovals []PendingApproval `json:"pendingApprovals,omitempty"`
}

// ID is the pipeline's or the batch's id.
func (m *PipelineManifest) ID() string { return m.PipelineID + m.BatchID }

// SetID names the id for what it is: a "batch" kind's is batchId.
func (m *PipelineManifest) SetID(kind, id string) {
	m.PipelineID, m.BatchID = setID(kind, id)
}

// ID is the pipeline's or the batch's id.
func (r *PipelineResult) ID() string { return r.PipelineID + r.BatchID }

// SetID names the id for what it is: a "batch" kind's is batchId.
func (r *PipelineResult) SetID(kind, id string) {
	r.PipelineID, r.BatchID = setID(kind, id)
}

func setID(kind, id string) (pipeline, batch string) {
	if kind == "batch" {
		return "", id
	}
	return id, ""
}
