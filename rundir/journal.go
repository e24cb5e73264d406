package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
)

// maxJournalLine bounds one journal line as read back: above the largest
// model response harness accepts (256 MiB) with room for its escaping.
// A longer line is not one harness wrote, and is not read whole.
const maxJournalLine = 1 << 30

// readJournal reads a run's journal without ever holding more than one
// line of it: the bytes after its last newline (the torn line a crash
// leaves) are measured, not read, and refused outright when run.json
// says the run ended, since run.json says running again before a resume
// writes on. Every other line is bounded by maxJournalLine.
func readJournal(f *os.File, status string) (artifacts.JournalContents, error) {
	st, err := f.Stat()
	if err != nil {
		return artifacts.JournalContents{}, err
	}
	size := st.Size()
	if status != outcome.StatusRunning && size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return artifacts.JournalContents{}, err
		}
		if last[0] != '\n' {
			return artifacts.JournalContents{}, tampered("bytes follow the journal's last line, but run.json says the run ended (%s): harness writes nothing after a run's end", status)
		}
	}
	c, err := ReadJournal(f)
	var long *LongLineError
	if errors.As(err, &long) {
		return c, tampered("%v", err)
	}
	return c, err
}

// LongLineError is a journal line longer than any harness writes.
type LongLineError struct{ Size int64 }

func (e *LongLineError) Error() string {
	return fmt.Sprintf("the journal ends in a line of %d bytes or more, longer than any harness writes (%d)", e.Size, maxJournalLine)
}

// ReadJournal reads a journal (a run's, a pipeline's or a batch's) as
// artifacts.ReadJournal does, holding no more than one line of it: the
// torn line after the last newline is measured, not read, and a line
// longer than maxJournalLine is an error.
func ReadJournal(f *os.File) (artifacts.JournalContents, error) {
	st, err := f.Stat()
	if err != nil {
		return artifacts.JournalContents{}, err
	}
	size := st.Size()
	end, err := lastNewline(f, size)
	if err != nil {
		return artifacts.JournalContents{}, err
	}
	tail := size - end
	if tail > maxJournalLine {
		return artifacts.JournalContents{}, &LongLineError{Size: tail}
	}
	c, err := artifacts.ReadJournal(&lineBound{r: io.NewSectionReader(f, 0, end)})
	if err != nil {
		return c, err
	}
	if tail > 0 {
		c.TornTail, c.TornBytes = true, int(tail)
	}
	return c, nil
}

// lastNewline is the offset just past the file's last newline, found
// reading backwards at most maxJournalLine bytes and one read more (0:
// none in the file). None within that bound is a LongLineError of the
// bytes scanned, the least the tail can be: the file's size would count
// the lines before it.
func lastNewline(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	pos := size
	for pos > 0 && size-pos <= maxJournalLine {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := lastNewlineIn(buf[:n]); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	if pos > 0 {
		return 0, &LongLineError{Size: size - pos}
	}
	return 0, nil
}

// lastNewlineIn is bytes.LastIndexByte(b, '\n') by forward IndexByte,
// which is vectorised where LastIndexByte walks byte by byte: a gigabyte
// of torn tail without a newline is scanned at memory speed.
func lastNewlineIn(b []byte) int {
	last := -1
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return last
		}
		last = off + i
		off = last + 1
	}
}

// lineBound fails a read once a line runs past maxJournalLine.
type lineBound struct {
	r    io.Reader
	line int64
}

func (l *lineBound) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if first := bytes.IndexByte(p[:n], '\n'); first < 0 {
		l.line += int64(n)
	} else {
		if l.line+int64(first) > maxJournalLine {
			l.line += int64(first)
		} else {
			l.line = int64(n - 1 - bytes.LastIndexByte(p[:n], '\n'))
		}
	}
	if l.line > maxJournalLine {
		return 0, fmt.Errorf("%w: a line of more than %d bytes, longer than any harness writes", artifacts.ErrJournalCorrupt, maxJournalLine)
	}
	return n, err
}
