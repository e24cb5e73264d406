// Package run is one invocation of harness: it resolves the workspace and
// skill roots, snapshots the registry, preloads skills, wires the tools to
// the prompt loop, and leaves a run directory whose artifacts a reviewer or
// a later run can trust. It is the only package that knows all the others.
package run
