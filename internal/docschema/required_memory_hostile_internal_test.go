package docschema

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema (an MCP server's tool, an eval check, --output-schema) whose
// items require 40,000 names, and a value (the model's arguments or
// answer) of 40,000 empty objects: both well under MaxValues, and one
// counted step per object. The validator keeps, for each object, the
// list of every name it misses, so the check holds objects × names
// strings (26 billion bytes here; 6,000 of each already took 936 MiB
// in 3 s) until its error is returned: memory the bounds were meant to
// keep small. The check must end within its bounds without the memory
// growing with the product. The child runs with 4 GiB of address space,
// so a failure ends it rather than the host's memory.
func TestRequiredNamesTimesObjectsStayBounded(t *testing.T) {
	if !testenv.InBoundedChild(t, 60*time.Second, "a check of 40,000 objects each missing 40,000 names") {
		return
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: 4 << 30, Max: 4 << 30}); err != nil {
		t.Fatal(err)
	}
	// 6,000 of each, few steps apiece, or 40,000.
	for _, n := range []int{6000, 40000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf(`"p%d"`, i)
		}
		s, err := Compile("t.json", []byte(`{"type":"object","properties":{"x":{"items":{"required":[`+strings.Join(names, ",")+`]}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"x":[` + strings.Repeat(`{},`, n-1) + `{}]}`))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = s.Validate(v)
		took := time.Since(start)
		// Whatever the check left running has time to show what it holds.
		time.Sleep(time.Second)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("%d: Validate took %v (%v), heap %d MiB after", n, took, err, ms.HeapAlloc>>20)
		if ms.HeapAlloc > 512<<20 {
			t.Fatalf("%d MiB held after the check of %d objects missing %d names: it grows with objects × names", ms.HeapAlloc>>20, n, n)
		}
		runtime.KeepAlive(err)
	}
}
