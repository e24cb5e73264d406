package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event is one line of journal.jsonl. Seq rises by one per event across
// every segment of a run, so a reader can detect a gap; Data is the event's
// own record, kept raw so the journal does not need to know every type.
type Event struct {
	Seq  int64           `json:"seq"`
	Time time.Time       `json:"time"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Journal is the append-only event log of a run. Each Append writes one
// complete line and fsyncs it before returning: an event that Append
// reported is on disk, and a crash can tear at most the last line.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	next int64
	// broken is the first write or sync failure: after it nothing more is
	// appended, since the line that failed may or may not be on disk and
	// a later line would either reuse its sequence number or follow a gap.
	broken error
	now    func() time.Time
	tee    func(line []byte)
	// redact is applied to every line before it is written.
	redact *Redactor
}

// OpenJournal opens (creating if needed) the journal at path for appending.
// nextSeq is the sequence number of the next event (1 for a new journal).
func OpenJournal(path string, nextSeq int64) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if nextSeq < 1 {
		nextSeq = 1
	}
	return &Journal{f: f, next: nextSeq, now: time.Now}, nil
}

// SetClock replaces the journal's time source (used to make replays
// reproducible in tests).
func (j *Journal) SetClock(now func() time.Time) { j.now = now }

// Tee registers a function that receives every appended line (without the
// trailing newline) after it is durable; `--json` streams the journal this way.
func (j *Journal) Tee(fn func(line []byte)) { j.tee = fn }

// SetRedactor makes every appended line pass through r first.
func (j *Journal) SetRedactor(r *Redactor) { j.redact = r }

// Append writes one event of the given type with data as its record.
func (j *Journal) Append(typ string, data any) (Event, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return Event{}, fmt.Errorf("journal %s: not appended after an earlier failure: %w", typ, j.broken)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("journal %s: %w", typ, err)
	}
	ev := Event{Seq: j.next, Time: j.now().UTC(), Type: typ, Data: raw}
	line, err := json.Marshal(ev)
	if err != nil {
		return Event{}, fmt.Errorf("journal %s: %w", typ, err)
	}
	line = append(j.redact.Bytes(line), '\n')
	if _, err := j.f.Write(line); err != nil {
		j.broken = err
		return Event{}, fmt.Errorf("journal %s: %w", typ, err)
	}
	if err := j.f.Sync(); err != nil {
		j.broken = err
		return Event{}, fmt.Errorf("journal %s: sync: %w", typ, err)
	}
	j.next++
	if j.tee != nil {
		j.tee(line[:len(line)-1])
	}
	return ev, nil
}

// Close closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// ErrJournalCorrupt reports a malformed line before the end of the journal,
// which a crash cannot produce; the journal cannot be trusted past it.
var ErrJournalCorrupt = errors.New("journal corrupt")

// JournalContents is what ReadJournal recovered.
type JournalContents struct {
	Events []Event
	// TornTail is set when the last line was incomplete (a crash during a
	// write); it was dropped. TornBytes is its length.
	TornTail  bool
	TornBytes int
	// ValidSize is the byte length of the complete lines; truncating the
	// file to it removes the torn tail.
	ValidSize int64
}

// ReadJournal reads every complete event from r. A final line without a
// newline or that does not parse is a torn tail and is dropped; a bad line
// anywhere else returns ErrJournalCorrupt naming the line.
func ReadJournal(r io.Reader) (JournalContents, error) {
	var out JournalContents
	br := bufio.NewReaderSize(r, 64<<10)
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return out, nil
		}
		if err != nil && err != io.EOF {
			return out, err
		}
		lineNo++
		complete := err == nil
		var ev Event
		body := bytes.TrimSuffix(line, []byte("\n"))
		perr := json.Unmarshal(body, &ev)
		if perr != nil || ev.Type == "" {
			// Only the very last line may be torn.
			if _, peekErr := br.Peek(1); peekErr == io.EOF {
				out.TornTail = true
				out.TornBytes = len(line)
				return out, nil
			}
			return out, fmt.Errorf("%w: line %d does not parse", ErrJournalCorrupt, lineNo)
		}
		if !complete {
			out.TornTail = true
			out.TornBytes = len(line)
			return out, nil
		}
		out.Events = append(out.Events, ev)
		out.ValidSize += int64(len(line))
	}
}
