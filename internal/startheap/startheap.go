package startheap

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"

	// The heap advice comes first: its init collects once on purpose,
	// which must not count as this package's first collection.
	_ "github.com/harness-dev/harness/internal/hugeheap"
)

// Heap is the memory limit until the first collection. The limit
// counts all of the runtime's memory, so the heap is collected first at
// about 38 MB: after the 30 MB of a warm snapshot of 2,000 skills, and
// early enough that a cold snapshot of 20,000 small skills (75 MB
// allocated, 40 MB kept) peaks at 84-86 MB resident, as before, under
// the 100 MB the registry benchmark allows (docs/benchmarks.md).
const Heap = 48 << 20

func init() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(Heap)
	deferred = true
	armRestore()
}

// sentinel is large enough to get its own allocation (the tiny
// allocator batches smaller pointer-free objects, whose finalizers may
// then never run).
type sentinel struct{ _ [64]byte }

func armRestore() {
	runtime.SetFinalizer(new(sentinel), func(*sentinel) { restore() })
}

// Release hands back to Go's usual policy now, for a process that will
// run long on little memory (the sandbox's helpers), where holding off
// collection would only hold garbage.
func Release() {
	if deferred {
		restore()
	}
}

// deferred says init changed the policy (the environment did not set it).
var deferred bool

func restore() {
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
}
