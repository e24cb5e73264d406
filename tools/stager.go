package tools

// Staging: the verified copy of a skill that its scripts and servers run
// from.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
)

// staging is a skill's verified copy: the files whose bytes equalled the
// snapshot when copied, and what was observed for the others.
type staging struct {
	dir      string
	observed map[string]artifacts.Digest // path -> digest of the bytes read
	verified map[string]bool             // path -> copied (matched the snapshot)
	refusal  map[string]error            // path -> why it could not be read
}

// Stager copies the skill files whose bytes equal the snapshot into a
// run-private directory, read-only, once per skill. Scripts and MCP
// servers run from there: what was checked is what runs, and relative
// imports resolve among verified files only.
type Stager struct {
	mu     sync.Mutex
	staged map[string]*staging // by skill name
}

// NewStager makes an empty stager; Close removes what it staged.
func NewStager() *Stager { return &Stager{staged: map[string]*staging{}} }

// Close removes the staged copies.
func (g *Stager) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, st := range g.staged {
		scripts.RemoveSealed(st.dir)
	}
	g.staged = map[string]*staging{}
}

// Dir returns the staged copy of s, staging it on first use.
func (g *Stager) Dir(s *skills.Skill) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, err := g.staging(s)
	if err != nil {
		return "", err
	}
	return st.dir, nil
}

func (g *Stager) staging(s *skills.Skill) (*staging, error) {
	if st, ok := g.staged[s.Name]; ok {
		return st, nil
	}
	st, err := stageSkill(s)
	if err != nil {
		return nil, err
	}
	g.staged[s.Name] = st
	return st, nil
}

// Stage returns the staged copy of s, in which file must have been
// verified, and the digest observed for file.
func (g *Stager) Stage(s *skills.Skill, file string) (string, artifacts.Digest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, err := g.staging(s)
	if err != nil {
		return "", "", err
	}
	res, _ := s.Resource(file)
	if err := st.refusal[file]; err != nil {
		return "", st.observed[file], err
	}
	if !st.verified[file] {
		return "", st.observed[file], &skills.Refusal{Code: "script_snapshot_mismatch", Msg: fmt.Sprintf("%s changed since the run-start snapshot (digest %s, snapshot %s): refusing to execute changed code, even with --allow-drift", file, st.observed[file], res.Digest)}
	}
	return st.dir, st.observed[file], nil
}

func stageSkill(s *skills.Skill) (*staging, error) {
	dir, err := scripts.MkdirReachable("harness-stage-")
	if err != nil {
		return nil, err
	}
	st := &staging{dir: dir, observed: map[string]artifacts.Digest{}, verified: map[string]bool{}, refusal: map[string]error{}}
	for _, res := range s.Resources {
		dst := filepath.Join(dir, filepath.FromSlash(res.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		d, n, cerr := skills.CopyResource(s, res.Path, f)
		f.Close()
		st.observed[res.Path] = d
		if cerr != nil || d != res.Digest || n != res.Size {
			os.Remove(dst)
			var ref *skills.Refusal
			if errors.As(cerr, &ref) && ref.Code == "resource_outside_root" {
				st.refusal[res.Path] = ref
			}
			continue
		}
		st.verified[res.Path] = true
		mode := os.FileMode(0o444)
		if res.Executable != nil && *res.Executable {
			mode = 0o555
		}
		os.Chmod(dst, mode)
	}
	scripts.SealDirs(dir)
	return st, nil
}
