package hugeheap

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestDisabled(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		want    bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"disablethp=0", false},
		{"madvdontneed=1,disablethp=1", true},
		{"disablethp=1, disablethp=0", false},
		{"disablethp=0,disablethp=1", true},
		{"xdisablethp=1", false},
	} {
		if got := disabled(tc.godebug); got != tc.want {
			t.Errorf("disabled(%q) = %v, want %v", tc.godebug, got, tc.want)
		}
	}
}

// mapping is one line of /proc/self/smaps with its VmFlags.
type mapping struct {
	start, end uintptr
	flags      []string
}

func mappings(t *testing.T) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && len(out) > 0 {
			out[len(out)-1].flags = strings.Fields(flags)
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			out = append(out, mapping{start: uintptr(a), end: uintptr(b)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func advisedRanges(t *testing.T) []mapping {
	var out []mapping
	for _, m := range mappings(t) {
		for _, f := range m.flags {
			if f == "hg" {
				out = append(out, m)
			}
		}
	}
	return out
}

// The heap objects allocated after init land in the freed block, most of
// it advised (all but its unaligned head): that is the whole point, and
// it rests on how the runtime places them.
func TestHeapAdvised(t *testing.T) {
	if os.Getenv("HUGEHEAP_CHILD") != "" {
		if len(advisedRanges(t)) > 0 {
			t.Fatal("advised mapping present under GODEBUG=disablethp=1")
		}
		return
	}
	ranges := advisedRanges(t)
	if len(ranges) == 0 {
		t.Fatal("no mapping advised for huge pages (no hg in /proc/self/smaps VmFlags)")
	}
	size := uintptr(0)
	for _, m := range ranges {
		size += m.end - m.start
	}
	if size < advised-2*hugePage {
		t.Fatalf("advised %d bytes, want at least %d", size, advised-2*hugePage)
	}
	b := make([]byte, 4<<20)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	last := p + uintptr(len(b)) - 1
	in := false
	for _, m := range ranges {
		in = in || (last >= m.start && last < m.end)
	}
	if !in {
		t.Errorf("a 4 MiB allocation at %#x does not reach into the advised ranges %v", p, ranges)
	}
}

func TestDisabledByGodebug(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHeapAdvised$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HUGEHEAP_CHILD=1", "GODEBUG=disablethp=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child with GODEBUG=disablethp=1: %v\n%s", err, out)
	}
}
