package hugeheap

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// advised is how much of the heap's address space is advised: the
// working heap of a run over a 2,000-skill root, and most of a snapshot
// of 20,000 skills. A larger block measured no faster and costs more
// runtime bookkeeping at every start.
const advised = 64 << 20

const hugePage = 2 << 20

func init() {
	if disabled(os.Getenv("GODEBUG")) {
		return
	}
	start, end := block(advised)
	// Advice on a mapped range cannot fail in a way worth reporting: at
	// worst the heap keeps 4 KiB pages, as without this package.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_HUGEPAGE)
	// The block is garbage now; collecting it returns its pages to the
	// page allocator, which places the next objects there.
	runtime.GC()
}

// block allocates size bytes and returns the huge-page-aligned range
// inside them. Only the addresses leave: the memory stays mapped after
// the block is freed, which is all the advice needs.
//
//go:noinline
func block(size uintptr) (start, end uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(make([]byte, size))))
	return (p + hugePage - 1) &^ (hugePage - 1), (p + size) &^ (hugePage - 1)
}

// disabled reports whether GODEBUG's last disablethp setting is 1.
func disabled(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "disablethp="); ok {
			off = v == "1"
		}
	}
	return off
}
