// Package grant turns a skill's permission manifest into what one
// execution of its code (a script, an MCP server, a draft's test) may
// touch on the backend that runs it: the workspace parts it sees, the
// environment it gets, what it may execute. What a backend cannot enforce
// is refused, never run looser.
package grant

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// BackendWasm names the WebAssembly runtime among the sandbox backends.
const BackendWasm = scripts.BackendWasm

// Request is one execution about to start.
type Request struct {
	Skill     *skills.Skill
	Workspace *workspace.Workspace
	Backend   scripts.Backend
	// PassEnv are the names the operator passes (--pass-env); Lookup
	// reads their values (the operator's environment).
	PassEnv []string
	Lookup  func(string) (string, bool)
	// Git is the run's index of git control paths (nil: only the
	// read-only paths missing at the start are swept after the call).
	Git *GitIndex
}

// Grant is what the execution gets.
type Grant struct {
	Record record.Grant
	// Mount is the workspace as the sandbox shows it.
	Mount scripts.Mount
	// View is the workspace as a WebAssembly module reads and writes it.
	View *workspace.Workspace
	// Env are NAME=VALUE pairs to add to the execution's environment.
	Env []string
	// LimitExec, Exec and ExecTemp are for scripts.Spec: Exec holds
	// absolute host paths, files and directories (ResolveExec).
	LimitExec bool
	Exec      []string
	ExecTemp  bool

	ws      *workspace.Workspace
	missing []string // read-only paths that did not exist before the call
	git     *GitIndex
}

// Refusal is an execution that must not start, with a stable code.
type Refusal = scripts.Refusal

// For computes the grant of r, or refuses it: a manifest that does not
// parse, a backend that cannot enforce it, a declared path that is not a
// plain path of the workspace.
func For(r Request) (*Grant, error) {
	ws := r.Workspace
	perms, err := skills.PermissionsOf(r.Skill.Frontmatter)
	if err != nil {
		return nil, &Refusal{Code: "skill_permissions_invalid", Msg: fmt.Sprintf("skill %s: %v", r.Skill.Name, err)}
	}
	g := &Grant{ws: ws, View: ws, Env: []string{}, git: r.Git}
	g.Record = record.Grant{Declared: perms != nil, Read: []string{}, Write: []string{}, ReadOnly: []string{}, Env: []string{}, Exec: []string{}}
	for _, rel := range ws.ReadOnlyRel() {
		if _, err := os.Lstat(filepath.Join(ws.Host, filepath.FromSlash(rel))); err != nil {
			g.missing = append(g.missing, rel)
		}
	}
	if perms == nil {
		g.Mount = scripts.Mount{Host: ws.Host, Sandbox: ws.Sandbox, Writable: true, ReadOnly: ws.ReadOnlyRel()}
		g.Record.Write = []string{"."}
		g.Record.ReadOnly = existing(ws, ws.ReadOnlyRel())
		g.Record.EnforcedBy = enforcement(r.Backend, false, false)
		return g, nil
	}
	if r.Backend == scripts.BackendNone {
		return nil, &Refusal{Code: "capability_unenforceable", Msg: fmt.Sprintf("skill %s declares a permission manifest, and --sandbox none runs its code on the host, where nothing enforces it; nothing was run. Use --sandbox auto (bwrap or Landlock)", r.Skill.Name)}
	}
	if r.Backend != BackendWasm && scripts.LandlockABI() == 0 {
		return nil, &Refusal{Code: "capability_unenforceable", Msg: fmt.Sprintf("skill %s declares a permission manifest, which limits what its code may execute, and this kernel offers no Landlock to enforce that; nothing was run", r.Skill.Name)}
	}
	write := cleanAll(perms.Filesystem.Write)
	read := slices.DeleteFunc(cleanAll(perms.Filesystem.Read), func(p string) bool { return slices.Contains(write, p) })
	for _, rel := range write {
		if err := ws.MkdirAll(rel); err != nil {
			pr := workspace.AsRefusal(err)
			return nil, &Refusal{Code: pr.Code, Msg: fmt.Sprintf("skill %s declares filesystem.write %s: %s", r.Skill.Name, rel, pr.Msg)}
		}
	}
	if err := checkHardLinks(ws, r.Skill.Name, write, read); err != nil {
		return nil, err
	}
	parts := []scripts.Part{}
	for _, rel := range read {
		parts = append(parts, scripts.Part{Rel: rel})
	}
	for _, rel := range write {
		parts = append(parts, scripts.Part{Rel: rel, Writable: true})
	}
	g.Mount = scripts.Mount{Host: ws.Host, Sandbox: ws.Sandbox, Only: parts, ReadOnly: ws.ReadOnlyRel()}
	g.View = ws.Narrow(read, write)
	g.Record.Read, g.Record.Write = read, write
	for _, rel := range existing(ws, ws.ReadOnlyRel()) {
		if workspace.Covers(write, rel) {
			g.Record.ReadOnly = append(g.Record.ReadOnly, rel)
		}
	}
	for _, n := range perms.Env {
		v, set := "", false
		if slices.Contains(r.PassEnv, n) && r.Lookup != nil {
			v, set = r.Lookup(n)
		}
		if !set {
			g.Record.Withheld = append(g.Record.Withheld, n)
			continue
		}
		g.Env = append(g.Env, n+"="+v)
		g.Record.Env = append(g.Record.Env, n)
	}
	set := ResolveExec(perms.Exec, os.Getenv("PATH"), ws.Host)
	if len(set.Refused) > 0 {
		return nil, &Refusal{Code: "exec_path_refused", Msg: fmt.Sprintf("skill %s: exec entries that would let it run what it writes: %s; name the program or the directory of programs it needs; nothing was run", r.Skill.Name, strings.Join(set.Refused, ", "))}
	}
	g.LimitExec, g.Exec, g.ExecTemp = true, set.Paths, set.Temp
	g.Record.ExecLimited, g.Record.Exec = true, append([]string{}, perms.Exec...)
	g.Record.ExecResolved, g.Record.ExecTemp, g.Record.ExecMissing = set.Shown, set.Temp, set.Missing
	g.Record.EnforcedBy = enforcement(r.Backend, true, len(perms.Network) > 0)
	return g, nil
}

// Sweep removes what the execution made at a read-only path that did not
// exist when it started (a .git made in a workspace that had none, where
// the sandbox had nothing to bind read-only) and undoes what it did to
// the git control paths anywhere (GitIndex.Sweep), and says what it found.
func (g *Grant) Sweep() []Change {
	var made []Change
	if len(g.missing) > 0 {
		made = g.sweepMissing()
	}
	for _, c := range g.git.Sweep() {
		if !slices.ContainsFunc(made, func(m Change) bool { return m.Path == c.Path }) {
			made = append(made, c)
		}
	}
	return made
}

// sweepMissing removes what the call made at each read-only path that
// was missing when it started. The path is followed beneath the
// workspace without a link: a link the script put on the way would have
// the removal land wherever it leads, outside the workspace too; what is
// reached only through one is said, and left.
func (g *Grant) sweepMissing() []Change {
	root, err := openRootDir(g.ws.Host)
	if err != nil {
		return []Change{{Path: ".", Note: fmt.Sprintf("the workspace cannot be opened to check it: %v", err), Left: true}}
	}
	defer unix.Close(root)
	var made []Change
	for _, rel := range g.missing {
		var st unix.Stat_t
		if err := fstatat(root, rel, &st); err != nil {
			if _, err := os.Lstat(filepath.Join(g.ws.Host, filepath.FromSlash(rel))); err == nil {
				made = append(made, Change{Path: rel, Note: "made, and reached through a link on the way: neither followed nor removed", Left: true})
			}
			continue
		}
		c := Change{Path: rel}
		if err := removeChecked(root, rel); err != nil {
			c.Note, c.Left = fmt.Sprintf("it could NOT be removed: %v", err), true
		}
		made = append(made, c)
	}
	return made
}

// enforcement names what enforces each part on backend.
func enforcement(backend scripts.Backend, declared, network bool) map[string]string {
	m := map[string]string{"env": "harness (the environment is built from nothing)"}
	switch backend {
	case scripts.BackendBwrap:
		m["filesystem"] = "bwrap mount namespace"
		m["exec"] = "landlock execute layer inside bwrap"
		m["network"] = "bwrap network namespace (no network)"
		if network {
			m["network"] = "bwrap network namespace and harness's egress proxy"
		}
	case scripts.BackendLandlock:
		m["filesystem"] = "landlock"
		m["exec"] = "landlock"
		m["network"] = "seccomp socket filter (no network)"
	case BackendWasm:
		m["filesystem"] = "wasm mounts"
		m["exec"] = "wasm (a module cannot start processes)"
		m["network"] = "wasm (no sockets)"
	default:
		m["filesystem"] = "none (--sandbox none: the host)"
		m["exec"] = "none (--sandbox none: the host)"
		m["network"] = "none (--sandbox none: the host)"
	}
	if !declared && backend != BackendWasm {
		m["exec"] = "not limited (the skill declares no manifest)"
	}
	return m
}

func cleanAll(ps []string) []string {
	out := []string{}
	for _, p := range ps {
		if c := path.Clean(p); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func existing(ws *workspace.Workspace, rels []string) []string {
	out := []string{}
	for _, rel := range rels {
		if _, err := os.Lstat(filepath.Join(ws.Host, filepath.FromSlash(rel))); err == nil {
			out = append(out, rel)
		}
	}
	return out
}
