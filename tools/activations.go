package tools

import (
	"sync"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// Activations is the set of skills active in a run and its record,
// skill-activations.json, rewritten atomically on every activation. The
// preload and load_skill add to it; the resource and script tools consult
// it.
type Activations struct {
	mu      sync.Mutex
	path    string
	journal *artifacts.Journal
	rec     record.Activations
	active  map[string]bool
	redact  *artifacts.Redactor
}

// NewActivations starts an empty set recorded at path.
func NewActivations(path string, j *artifacts.Journal, redact *artifacts.Redactor) *Activations {
	return &Activations{
		path:    path,
		journal: j,
		redact:  redact,
		rec:     record.Activations{Envelope: artifacts.NewEnvelope(record.TypeActivations, record.Version), Activations: []record.Activation{}},
		active:  map[string]bool{},
	}
}

// Restore takes over the activations a stopped run recorded.
func (l *Activations) Restore(rec record.Activations) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec = rec
	for _, a := range rec.Activations {
		l.active[a.Name] = true
	}
}

// IsActive reports whether the skill is in the model's context.
func (l *Activations) IsActive(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active[name]
}

// Add records an activation: journal first (the source of truth), then
// the artifact.
func (l *Activations) Add(a record.Activation) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.journal.Append(record.EventSkillActivated, a); err != nil {
		return err
	}
	l.active[a.Name] = true
	l.rec.Activations = append(l.rec.Activations, a)
	return l.redact.WriteJSON(l.path, &l.rec)
}

// Write rewrites the artifact.
func (l *Activations) Write() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.redact.WriteJSON(l.path, &l.rec)
}

// List returns the activations in order.
func (l *Activations) List() []record.Activation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]record.Activation{}, l.rec.Activations...)
}

// Digests are the activated skills' digests in order.
func (l *Activations) Digests() []artifacts.Digest {
	out := []artifacts.Digest{}
	for _, a := range l.List() {
		out = append(out, a.Digest)
	}
	return out
}

// Names are the active skills.
func (l *Activations) Names() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for k := range l.active {
		out[k] = true
	}
	return out
}
