// Package scripts runs skill scripts: it turns a runtime and verified
// script path into a command line, and executes it in a sandbox backend
// (bwrap, or the host when the operator asks for none) with a timeout that
// kills the whole process tree, rlimits and capped output. It knows
// nothing of skills or models: it takes argv, environment and mounts.
package scripts
