// Package startheap holds off garbage collection while a harness process
// is young, and then hands back to Go's usual policy. Import it for its
// effect, from a main package only.
//
// Why: a harness invocation is short, and most of what it allocates in
// its first tens of megabytes it keeps to the end: a warm snapshot of
// 2,000 skills ends with 28 of its 30 MB live. Go's default policy
// collects at 4, 8, 16 and 30 MB on the way there, marking the same
// objects again each time, with write barriers slowing every allocation
// while it marks; none of it frees anything worth having. (The Go
// compiler does the same for the same reason: cmd/compile raises its
// starting heap goal before it begins.)
//
// How: init turns the proportional collector off and sets a memory
// limit of Heap bytes instead, so the first collection comes when the
// runtime's memory reaches Heap. A finalizer on an object that dies in that first
// collection restores GOGC=100 and removes the limit, so a process whose
// heap goes on growing (a snapshot of 20,000 skills) is collected as
// usual from then on, and one whose live heap outgrows Heap never runs
// at the limit.
//
// A GOGC or GOMEMLIMIT in the environment is the operator's choice and
// turns this off.
package startheap
