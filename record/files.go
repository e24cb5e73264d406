package record

// File and directory names in a run directory.
const (
	FileManifest          = "run.json"
	FileJournal           = "journal.jsonl"
	FileRegistry          = "skill-registry.json"
	FileActivations       = "skill-activations.json"
	FileResourceReads     = "skill-resource-reads.json"
	FileScriptExecutions  = "skill-script-executions.json"
	FileCommandExecutions = "command-executions.json"
	FilePolicySnapshot    = "policy-snapshot.json"
	FilePolicyTrace       = "policy-trace.json"
	FileDrift             = "drift-report.json"
	FileMCPServers        = "mcp-servers.json"
	FileNetworkLog        = "network-log.jsonl"
	FileLock              = "lock"
	DirToolOutputs        = "tool-outputs"
	DirChildren           = "children"
)

// Envelope type names, with the newest version this harness writes.
const (
	TypeManifest          = "harness.run"
	TypeActivations       = "harness.skill-activations"
	TypeResourceReads     = "harness.skill-resource-reads"
	TypeResourceRead      = "harness.skill-resource-read"
	TypeScriptExecutions  = "harness.skill-script-executions"
	TypeCommandExecutions = "harness.command-executions"
	TypeCommandExecution  = "harness.command-execution"
	TypeScriptExecution   = "harness.skill-script-execution"
	TypePolicySnapshot    = "harness.policy-snapshot"
	TypePolicyTrace       = "harness.policy-trace"
	TypeDrift             = "harness.drift-report"
	TypeToolOutput        = "harness.tool-output"
	TypeSubagentResult    = "harness.subagent-result"
	TypeMCPServers        = "harness.mcp-servers"
	TypeMCPCall           = "harness.mcp-call"
	TypeNetworkAttempt    = "harness.network-attempt"

	Version = 1
)

// Journal event types.
const (
	EventRunCreated          = "run.created"
	EventRunStarted          = "run.started"
	EventRunResumed          = "run.resumed"
	EventRunContinued        = "run.continued"
	EventRunFinished         = "run.finished"
	EventRegistrySnapshotted = "registry.snapshotted"
	EventCatalogTruncated    = "catalog.truncated"
	EventContentFlagged      = "content.flagged"
	EventSkillActivated      = "skill.activated"
	EventSkillsSearched      = "skills.searched"
	EventSkillsDiscovered    = "skills.discovered"
	EventSkillCreated        = "skill.created"
	EventRegistryDelta       = "registry.delta"
	EventEmbeddings          = "embeddings"
	EventSkillSkipped        = "skill.skipped"
	EventPolicyDecision      = "policy.decision"
	EventOutputWithheld      = "output.withheld"
	EventDriftDetected       = "drift.detected"
	EventModelRetry          = "provider.retry"
	EventModelFallback       = "model.fallback"
	EventModelChanged        = "model.changed"
	EventModelRequest        = "model.request"
	EventTierUnmapped        = "tier.unmapped"
	EventModelResponse       = "model.response"
	EventToolStarted         = "tool.started"
	EventToolFinished        = "tool.finished"
	EventToolOutputRestored  = "tool.output.restored"
	EventLimitReached        = "limit.reached"
	EventAnswerRejected      = "answer.rejected"
	EventMCPServerStarted    = "mcp.server.started"
	EventMCPServerFailed     = "mcp.server.failed"
	EventChildEnded          = "child.ended"
)
