// Package resolve checks what a run's options name on the filesystem
// before the run records them: the workspace and --cwd as absolute paths
// with every link resolved, the skill roots inside the workspace (`auto`
// expanded to the conventional ones it has) and those outside it, and the
// --attach files, each read once. Every refusal is a usage error that
// names the flag. It knows nothing of runs, models or tools: run calls it
// once and keeps what it returns.
package resolve
