// Package workspace confines file access to the operator's workspace. A path
// from the model is resolved to a clean path relative to the workspace root;
// every file or directory is opened through an os.Root (so symbolic links
// cannot leave the workspace), and the opened descriptor itself is checked
// against the protected paths (the run directory, a cassette being
// recorded) before a byte is read or written. A path string can be swapped
// between a check and its use; an open descriptor cannot.
//
// It knows nothing of tools, models or runs.
package workspace
