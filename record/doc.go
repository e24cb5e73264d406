// Package record is the schema of a run directory: one Go type per JSON
// artifact and per journal event that harness writes, each with the type
// name and version its envelope carries. Writers (run, tools) and readers
// (resume, and later report) use these types and nothing else.
//
// The loop writes its own per-turn events; it sits below this package, so
// those types are defined in loop and named here as aliases, keeping the
// whole schema in one place to read. record holds data, not behaviour.
package record
