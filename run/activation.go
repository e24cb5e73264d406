package run

import (
	"sync"

	"github.com/harness-dev/harness/artifacts"
)

// Activation sources.
const (
	SourceCLIPreload = "cli-preload"
	SourceModelTool  = "model-tool"
)

// activationLog is the set of skills active in this run and its record,
// skill-activations.json, rewritten atomically on every activation.
type activationLog struct {
	mu      sync.Mutex
	path    string
	journal *artifacts.Journal
	rec     Activations
	active  map[string]bool
}

func newActivationLog(path string, j *artifacts.Journal) *activationLog {
	return &activationLog{
		path:    path,
		journal: j,
		rec:     Activations{Envelope: artifacts.NewEnvelope("harness.skill-activations", 1), Activations: []Activation{}},
		active:  map[string]bool{},
	}
}

func (l *activationLog) isActive(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active[name]
}

// add records an activation: journal first (the source of truth), then
// the artifact.
func (l *activationLog) add(a Activation) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.journal.Append("skill.activated", a); err != nil {
		return err
	}
	l.active[a.Name] = true
	l.rec.Activations = append(l.rec.Activations, a)
	return artifacts.WriteJSON(l.path, &l.rec)
}

func (l *activationLog) write() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return artifacts.WriteJSON(l.path, &l.rec)
}

func (l *activationLog) digests() []artifacts.Digest {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []artifacts.Digest{}
	for _, a := range l.rec.Activations {
		out = append(out, a.Digest)
	}
	return out
}

func (l *activationLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.rec.Activations)
}
