package startheap

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// child runs this test binary again with env (and without any GOGC or
// GOMEMLIMIT of its own), so that init runs under known conditions, and
// reports the child's check through its exit status.
func child(t *testing.T, test string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append(env, "STARTHEAP_CHILD="+test)...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("child %s: %v\n%s", test, err, out)
	}
}

func inChild(test string) bool { return os.Getenv("STARTHEAP_CHILD") == test }

// policy reads GOGC and the memory limit without changing them.
func policy() (gogc int, limit int64) {
	gogc = debug.SetGCPercent(-1)
	debug.SetGCPercent(gogc)
	return gogc, debug.SetMemoryLimit(-1)
}

func TestFirstCollectionHandsBack(t *testing.T) {
	const name = "TestFirstCollectionHandsBack"
	if !inChild(name) {
		child(t, name)
		return
	}
	if gogc, limit := policy(); gogc != -1 || limit != Heap {
		t.Fatalf("at start: GOGC %d, limit %d; want off and %d", gogc, limit, Heap)
	}
	// The finalizer runs on the runtime's finalizer goroutine after the
	// collection that frees its object; yield until it has.
	for i := 0; i < 1000; i++ {
		runtime.GC()
		runtime.Gosched()
		if gogc, limit := policy(); gogc == 100 && limit == math.MaxInt64 {
			return
		}
	}
	gogc, limit := policy()
	t.Fatalf("after collections: GOGC %d, limit %d; want 100 and none", gogc, limit)
}

func TestEnvironmentWins(t *testing.T) {
	const name = "TestEnvironmentWins"
	for _, env := range []string{"GOGC=300", "GOMEMLIMIT=1GiB"} {
		if !inChild(name) {
			child(t, name, env)
			continue
		}
		gogc, limit := policy()
		wantGOGC, wantLimit := 100, int64(math.MaxInt64)
		if v := os.Getenv("GOGC"); v != "" {
			wantGOGC, _ = strconv.Atoi(v)
		}
		if os.Getenv("GOMEMLIMIT") != "" {
			wantLimit = 1 << 30
		}
		if gogc != wantGOGC || limit != wantLimit {
			t.Fatalf("GOGC=%q GOMEMLIMIT=%q: policy GOGC %d, limit %d; want %d, %d", os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"), gogc, limit, wantGOGC, wantLimit)
		}
		return
	}
}

func TestRelease(t *testing.T) {
	const name = "TestRelease"
	if !inChild(name) {
		child(t, name)
		return
	}
	Release()
	if gogc, limit := policy(); gogc != 100 || limit != math.MaxInt64 {
		t.Fatalf("after Release: GOGC %d, limit %d; want 100 and none", gogc, limit)
	}
}
