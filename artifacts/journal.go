package artifacts

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Event is one line of journal.jsonl. Seq rises by one per event across
// every segment of a run, so a reader can detect a gap; Prev is the digest
// of the previous line as written (empty for the first), which chains every
// line to all before it; Data is the event's own record, kept raw so the
// journal does not need to know every type. Mac, present when the run is
// sealed with a key, is an HMAC-SHA256 of the line without it.
type Event struct {
	Seq  int64           `json:"seq"`
	Time time.Time       `json:"time"`
	Type string          `json:"type"`
	Prev Digest          `json:"prev,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	Mac  string          `json:"mac,omitempty"`
	// Raw is the line as read, without its newline.
	Raw []byte `json:"-"`
}

// Journal is the append-only event log of a run. Each Append writes one
// complete line and fsyncs it, with every line before it, before
// returning: an event that Append reported is on disk, and a crash can
// tear at most the last line. AppendDeferred writes its line at once (so
// order and chain are those of the calls) but leaves the fsync to the next
// Append or Sync; a caller uses it for an event that no side effect
// follows before the next durable point, which saves an fsync per event.
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
	// unsynced are lines written but not yet fsynced (only what the tee
	// still has to see is kept).
	unsynced     [][]byte
	haveUnsynced bool
	// redact is applied to every line before it is written.
	redact *Redactor
	// head is the digest of the last line written; key, when set, seals
	// each line with an HMAC.
	head Digest
	key  []byte
}

// OpenJournal opens (creating if needed) the journal at path for appending.
// nextSeq is the sequence number of the next event (1 for a new journal).
// The journal's own name is opened as OpenBeneath opens it: a link there
// (ErrOutsideDir) would carry every appended line to wherever it points.
func OpenJournal(path string, nextSeq int64) (*Journal, error) {
	f, err := OpenBeneath(filepath.Dir(path), filepath.Base(path), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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

// Continue makes the next event chain to head, the digest of the last line
// already in the file (a resumed run), and seals lines with key if set.
func (j *Journal) Continue(head Digest, key []byte) { j.head, j.key = head, key }

// Head is the digest of the last line written.
func (j *Journal) Head() Digest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.head
}

// Append writes one event of the given type with data as its record and
// makes it durable, together with every deferred line before it.
func (j *Journal) Append(typ string, data any) (Event, error) {
	return j.append(typ, data, true)
}

// AppendDeferred writes one event like Append but does not fsync it: it
// becomes durable with the next Append or Sync (or is lost, with any
// deferred lines after it, if the machine stops first; a process that is
// killed loses nothing written).
func (j *Journal) AppendDeferred(typ string, data any) (Event, error) {
	return j.append(typ, data, false)
}

func (j *Journal) append(typ string, data any, durable bool) (Event, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return Event{}, fmt.Errorf("journal %s: not appended after an earlier failure: %w", typ, j.broken)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("journal %s: %w", typ, err)
	}
	ev := Event{Seq: j.next, Time: j.now().UTC(), Type: typ, Prev: j.head, Data: raw}
	body, err := json.Marshal(ev)
	if err != nil {
		return Event{}, fmt.Errorf("journal %s: %w", typ, err)
	}
	body = seal(j.redact.Bytes(body), j.key)
	line := append(body, '\n')
	if _, err := j.f.Write(line); err != nil {
		j.broken = err
		return Event{}, fmt.Errorf("journal %s: %w", typ, err)
	}
	j.next++
	j.head = DigestBytes(body)
	j.haveUnsynced = true
	if j.tee != nil {
		j.unsynced = append(j.unsynced, line[:len(line)-1])
	}
	if durable {
		if err := j.syncLocked(); err != nil {
			return Event{}, fmt.Errorf("journal %s: %w", typ, err)
		}
	}
	return ev, nil
}

// Sync makes every line written so far durable.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return fmt.Errorf("journal: not synced after an earlier failure: %w", j.broken)
	}
	return j.syncLocked()
}

func (j *Journal) syncLocked() error {
	if !j.haveUnsynced {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		j.broken = err
		return fmt.Errorf("sync: %w", err)
	}
	j.haveUnsynced = false
	lines := j.unsynced
	j.unsynced = nil
	for _, l := range lines {
		j.tee(l)
	}
	return nil
}

// Close makes deferred lines durable and closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var err error
	if j.broken == nil {
		err = j.syncLocked()
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
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
			// Only the very last line may be torn, and only if it never
			// got its newline: a write is one call that ends with it.
			if _, peekErr := br.Peek(1); peekErr == io.EOF && !complete {
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
		ev.Raw = body
		out.Events = append(out.Events, ev)
		out.ValidSize += int64(len(line))
	}
}

// macField is how a seal ends a line: the last field of the object.
var macField = []byte(`,"mac":"`)

// seal appends the HMAC of body as its last field.
func seal(body, key []byte) []byte {
	if len(key) == 0 {
		return body
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	out := append([]byte{}, body[:len(body)-1]...)
	out = append(out, macField...)
	out = append(out, hex.EncodeToString(m.Sum(nil))...)
	return append(out, '"', '}')
}

// ChainError is the first line of a journal that does not belong to it.
type ChainError struct {
	Line   int
	Reason string
}

func (e *ChainError) Error() string { return fmt.Sprintf("journal line %d: %s", e.Line, e.Reason) }

// VerifyChain checks that the events form one unbroken chain from the
// first line: sequence numbers 1, 2, 3, ..., each line's prev the digest of
// the line before, and with a key every line's HMAC. It returns the digest
// of the last line (the head). An edited, removed, inserted or reordered
// line breaks it; so does any line written without the key.
func VerifyChain(events []Event, key []byte) (Digest, error) {
	var head Digest
	for i, ev := range events {
		line := i + 1
		if ev.Seq != int64(line) {
			return "", &ChainError{line, fmt.Sprintf("sequence number %d where %d belongs", ev.Seq, line)}
		}
		if ev.Prev != head {
			return "", &ChainError{line, "does not follow the line before it (its prev digest differs)"}
		}
		if len(key) > 0 {
			if err := checkMac(ev.Raw, key); err != nil {
				return "", &ChainError{line, err.Error()}
			}
		}
		head = DigestBytes(ev.Raw)
	}
	return head, nil
}

func checkMac(raw, key []byte) error {
	i := bytes.LastIndex(raw, macField)
	if i < 0 || !bytes.HasSuffix(raw, []byte(`"}`)) {
		return errors.New("has no seal (HARNESS_RUN_KEY was not set when it was written, or it was added later)")
	}
	got, err := hex.DecodeString(string(raw[i+len(macField) : len(raw)-2]))
	if err != nil {
		return errors.New("its seal is malformed")
	}
	body := append(append([]byte{}, raw[:i]...), '}')
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return errors.New("its seal does not verify with this key")
	}
	return nil
}

// Sealed reports whether a journal line carries a seal (an HMAC written
// with HARNESS_RUN_KEY).
func Sealed(raw []byte) bool { return bytes.Contains(raw, macField) }
