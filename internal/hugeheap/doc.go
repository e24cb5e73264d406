// Package hugeheap asks Linux to back the first part of the Go heap with
// transparent huge pages. Import it for its effect, from a main package
// only, before anything large is allocated.
//
// Why: on the virtual machines harness is measured on, every 4 KiB page
// fault costs 15 to 20 µs (docs/benchmarks.md), and a run over a large
// skills root touches tens of megabytes of fresh heap: most of its time
// was page faults. One 2 MiB fault replaces 512 of them. The machines run
// with transparent huge pages in "madvise" mode, and since Go 1.21.1 the
// runtime no longer advises its own heap, so nothing asks.
//
// How: init allocates one large block, which the runtime maps but does
// not touch, advises it (MADV_HUGEPAGE only sets a flag on the mapping;
// the contents are untouched), and lets a collection free it. Go never
// unmaps heap memory and its page allocator hands out the lowest free
// addresses first, so the objects allocated next are placed in the
// advised range. It costs one early collection (5 to 8 ms at start on the
// measured machine, repaid by the faults it saves). Memory that
// is never touched still costs nothing; a touched huge page counts 2 MiB
// towards the resident size.
//
// GODEBUG=disablethp=1, Go's own switch for keeping huge pages off the
// heap, turns this off too.
package hugeheap
