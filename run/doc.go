// Package run is one invocation of harness: it checks the options
// (runopts) against the filesystem (resolve), records them (run.json),
// snapshots the skill registry, preloads skills, wires the tools to the prompt loop under the
// CFC gate, and finishes the run directory. A resume walks the same stages
// from a run directory instead of from options.
//
// run knows the other packages; none of them knows run. The model-facing
// tools are in tools, installing skills is in store, and the schema of
// the run directory is in record.
package run
