package pipeline

import "github.com/harness-dev/harness/record"

// layout is what differs between a pipeline directory and a batch
// directory: names. The scheduler, the record and resume are the same.
type layout struct {
	kind         string // "pipeline" or "batch"
	unit         string // "phase" or "task", for events and messages
	manifest     string
	journal      string
	result       string
	runs         string // the directory holding each unit's run directory
	manifestType string
	resultType   string
	// version is that of the manifest and the result.
	version int
}

var (
	pipelineLayout = layout{
		kind: "pipeline", unit: "phase",
		manifest: record.FilePipeline, journal: record.FilePipelineJournal, result: record.FilePipelineResult,
		runs: record.DirPhases, manifestType: record.TypePipeline, resultType: record.TypePipelineResult,
		version: record.PipelineVersion,
	}
	batchLayout = layout{
		kind: "batch", unit: "task",
		manifest: record.FileBatch, journal: record.FileBatchJournal, result: record.FileBatchResult,
		runs: record.DirBatchRuns, manifestType: record.TypeBatch, resultType: record.TypeBatchResult,
		version: record.BatchVersion,
	}
)

// Event names: <kind>.started, <unit>.finished, ...
func (l layout) started() string      { return l.kind + ".started" }
func (l layout) resumed() string      { return l.kind + ".resumed" }
func (l layout) drift() string        { return l.kind + ".drift" }
func (l layout) finished() string     { return l.kind + ".finished" }
func (l layout) summarized() string   { return l.kind + ".summarized" }
func (l layout) unitStarted() string  { return l.unit + ".started" }
func (l layout) unitFinished() string { return l.unit + ".finished" }
func (l layout) unitSkipped() string  { return l.unit + ".skipped" }
func (l layout) unitReused() string   { return l.unit + ".reused" }
func (l layout) unitRefused() string  { return l.unit + ".refused" }
