// Package rundir is a run directory: Create makes one and TakeLock keeps
// it to one process at a time. Read back, nothing in one is trusted
// because harness once wrote it: Open verifies the directory (the
// journal's hash chain and seal, run.json against what the journal
// recorded, the end of every segment, each file the journal refers to)
// and rebuilds the run from the journal alone, which resume continues;
// Verify gives every other reader its verdict.
package rundir
