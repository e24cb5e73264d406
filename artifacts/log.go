package artifacts

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Log is an append-only JSONL file of records that, unlike the journal,
// are not chained: each line is one typed record, redacted, written whole
// and fsynced before Append returns.
type Log struct {
	mu     sync.Mutex
	f      *os.File
	redact *Redactor
	broken error
}

// OpenLog opens (creating if needed) the log at path for appending.
func OpenLog(path string, redact *Redactor) (*Log, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Log{f: f, redact: redact}, nil
}

// Append writes v as one line. After a failed write or sync nothing more
// is appended: the failed line may or may not be on disk.
func (l *Log) Append(v any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return fmt.Errorf("%s: not appended after an earlier failure: %w", l.f.Name(), l.broken)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line := append(l.redact.Bytes(b), '\n')
	if _, err := l.f.Write(line); err != nil {
		l.broken = err
		return fmt.Errorf("%s: %w", l.f.Name(), err)
	}
	if err := l.f.Sync(); err != nil {
		l.broken = err
		return fmt.Errorf("%s: sync: %w", l.f.Name(), err)
	}
	return nil
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
