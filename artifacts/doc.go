// Package artifacts owns the run directory's on-disk contracts: versioned
// JSON envelopes written atomically, the fsynced JSONL journal, and blake3
// content digests. It knows nothing of skills, models or policy; the record
// types of those domains live in their own packages and are written here.
package artifacts
