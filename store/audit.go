package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// The audit log is a journal like a run's: one JSON line per lifecycle
// step, fsynced, each carrying the digest of the line before it (and an
// HMAC when HARNESS_RUN_KEY is set). A head file names the last line, so
// that removing or editing the last line is caught too, not only a
// change before it.

// AuditError is the first line of the audit log that does not verify.
type AuditError struct {
	Line   int
	Reason string
}

func (e *AuditError) Error() string {
	return fmt.Sprintf("%s line %d: %s", record.FileSkillsAudit, e.Line, e.Reason)
}

// readAudit reads and verifies the whole log against its head file; it
// returns the events and the head to continue from.
func readAudit(dir string, key []byte) ([]artifacts.Event, artifacts.Digest, error) {
	path := filepath.Join(dir, record.FileSkillsAudit)
	var head record.SkillsAuditHead
	headErr := artifacts.ReadJSON(filepath.Join(dir, record.FileSkillsAuditHead), record.TypeSkillsAuditHead, record.SkillStoreVersion, &head)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if headErr == nil && head.Seq > 0 {
			return nil, "", &AuditError{1, fmt.Sprintf("the log is missing but its head names %d lines", head.Seq)}
		}
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	c, err := artifacts.ReadJournal(f)
	if err != nil {
		return nil, "", &AuditError{len(c.Events) + 1, "does not parse"}
	}
	if c.TornTail {
		// An audit line is written whole and fsynced before the change it
		// records is reported; a torn line is a crash during that write,
		// and the change it describes did not complete. It is still not
		// ours to drop silently.
		return nil, "", &AuditError{len(c.Events) + 1, "is incomplete (a crash while it was written); the change it records did not complete: remove the partial line by hand after checking"}
	}
	last, err := artifacts.VerifyChain(c.Events, key)
	if err != nil {
		var ce *artifacts.ChainError
		if errors.As(err, &ce) {
			return nil, "", &AuditError{ce.Line, ce.Reason}
		}
		return nil, "", err
	}
	n := int64(len(c.Events))
	switch {
	case headErr != nil && n > 0:
		return nil, "", &AuditError{int(n), fmt.Sprintf("the head file %s cannot be read: %v", record.FileSkillsAuditHead, headErr)}
	case head.Seq > n:
		return nil, "", &AuditError{int(n) + 1, fmt.Sprintf("missing: the head names %d lines, the log has %d (lines were removed from the end)", head.Seq, n)}
	case head.Seq < n:
		return nil, "", &AuditError{int(head.Seq) + 1, fmt.Sprintf("not recorded in the head (it names %d lines): appended outside harness, or harness was killed between writing it and its head", head.Seq)}
	case n > 0 && head.Head != last:
		return nil, "", &AuditError{int(n), "was changed after it was written (its digest differs from the head's)"}
	}
	return c.Events, last, nil
}

// VerifyAudit checks a store's audit log: every line chained to the one
// before, sealed when key is set, and the last one matching the head. It
// returns the number of lines, or an *AuditError naming the first bad one.
func VerifyAudit(dir string, key []byte) (int, error) {
	evs, _, err := readAudit(dir, key)
	return len(evs), err
}

// appendAudit writes one event; the caller holds the store lock.
func (s *Store) appendAudit(typ string, ev record.SkillAuditEvent) error {
	evs, head, err := readAudit(s.Dir, s.Key)
	if err != nil {
		return auditBroken(err, s.Dir)
	}
	j, err := artifacts.OpenJournal(filepath.Join(s.Dir, record.FileSkillsAudit), int64(len(evs))+1)
	if err != nil {
		return err
	}
	defer j.Close()
	j.Continue(head, s.Key)
	if s.Now != nil {
		j.SetClock(s.Now)
	}
	written, err := j.Append(typ, ev)
	if err != nil {
		return err
	}
	return artifacts.WriteJSON(filepath.Join(s.Dir, record.FileSkillsAuditHead), record.SkillsAuditHead{
		Envelope: artifacts.NewEnvelope(record.TypeSkillsAuditHead, record.SkillStoreVersion), Seq: written.Seq, Head: j.Head()})
}

func auditBroken(err error, dir string) error {
	return outcome.Failed("skills_audit_broken", "the skill store's audit log does not verify (%v); nothing was changed: run harness skills audit verify --store %s", err, dir)
}

// Audit records a step that changes no version (a draft created, a test
// run) in the log.
func (s *Store) Audit(typ string, ev record.SkillAuditEvent) error {
	unlock, err := s.begin()
	if err != nil {
		return err
	}
	defer unlock()
	return s.appendAudit(typ, ev)
}
