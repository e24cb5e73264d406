package rundir

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// Lock keeps a second run or resume off a run directory while this
// process works in it. The kernel drops the lock when the process dies,
// so a crash never leaves a directory locked.
type Lock struct{ f *os.File }

// maxHolder bounds what is read of a lock's holder line.
const maxHolder = 4 << 10

// TakeLock locks dir for this process, or says who holds it (a policy
// refusal: one run or resume at a time). The lock file is opened as every
// file of the directory is: a link there is refused before it is created,
// truncated or written through.
func TakeLock(dir string, now time.Time) (*Lock, error) {
	f, err := openFile(dir, record.FileLock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := make([]byte, maxHolder)
		n, _ := f.ReadAt(holder, 0)
		f.Close()
		who := strings.TrimSpace(strings.SplitN(string(holder[:n]), "\n", 2)[0])
		if who == "" {
			who = "another process"
		}
		return nil, outcome.Policy("run_locked", "run directory %s is in use by %s: wait for it to finish (one run or resume at a time)", dir, who)
	}
	host, _ := os.Hostname()
	f.Truncate(0)
	f.Seek(0, io.SeekStart)
	fmt.Fprintf(f, "harness pid %d on %s since %s\n", os.Getpid(), host, now.UTC().Format(time.RFC3339))
	f.Sync()
	return &Lock{f: f}, nil
}

// Release unlocks the directory; a nil lock is none.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	l.f.Truncate(0)
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
