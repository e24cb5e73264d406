package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// Bounds on the throwaway workspace a draft's tests run against, and on
// what of a test's output goes back to the model.
const (
	maxCopyFiles   = 20000
	maxCopyBytes   = 256 << 20
	maxShownOutput = 4 << 10
	testTimeout    = 60 * time.Second
)

// Sandbox is how drafts' tests run: the run's probed backend, as for
// run_skill_script.
type Sandbox struct {
	Backend     scripts.Backend
	Probe       error // why no backend can start; tests are then refused
	Helper      string
	MemoryLimit uint64
	RunID       string
}

// errCopyTooLarge refuses a workspace too big to copy for a test.
var errCopyTooLarge = errors.New("the workspace is too large to copy for a draft's tests")

// runTests runs every test of a draft against its own throwaway copy of
// the workspace: a test can write there, and nothing reaches the real
// workspace. The draft is mounted read-only.
func runTests(ctx context.Context, sb Sandbox, ws *workspace.Workspace, s *skills.Skill, draftDir string, tests []Test) ([]record.ForgeTestResult, error) {
	if len(tests) == 0 {
		return []record.ForgeTestResult{}, nil
	}
	if sb.Probe != nil {
		return nil, fmt.Errorf("no sandbox can run the draft's tests on this machine (%v)", sb.Probe)
	}
	base, err := scripts.MkdirReachable("harness-forge-")
	if err != nil {
		return nil, err
	}
	defer scripts.RemoveSealed(base)
	if err := os.Chmod(base, 0o755); err != nil {
		return nil, err
	}
	skillCopy := filepath.Join(base, "skill")
	if err := copyTree(draftDir, skillCopy, nil); err != nil {
		return nil, err
	}
	readOnly(skillCopy)
	var out []record.ForgeTestResult
	for i, t := range tests {
		wsCopy := filepath.Join(base, fmt.Sprintf("workspace-%d", i+1))
		if err := copyTree(ws.Host, wsCopy, ws.Protected); err != nil {
			return nil, err
		}
		out = append(out, runOne(ctx, sb, ws, s, skillCopy, wsCopy, t))
	}
	return out, nil
}

func runOne(ctx context.Context, sb Sandbox, ws *workspace.Workspace, s *skills.Skill, skillCopy, wsCopy string, t Test) record.ForgeTestResult {
	r := record.ForgeTestResult{Script: t.Script, Args: t.Args, Backend: string(sb.Backend), ExitCode: -1}
	if r.Args == nil {
		r.Args = []string{}
	}
	res, ok := s.Resource(t.Script)
	if !ok || res.Kind != skills.KindScript {
		r.Failure = fmt.Sprintf("%s is not a script of the draft", t.Script)
		return r
	}
	// Where the script sees itself and the workspace: the sandbox's
	// paths under bwrap, the host copies under the other backends.
	skillDir, wsDir := "/skills/forge/"+s.Name, ws.Sandbox
	if sb.Backend != scripts.BackendBwrap {
		skillDir, wsDir = skillCopy, wsCopy
	}
	cmd, err := scripts.Command(res.Runtime, res.Shebang, skillDir+"/"+t.Script, t.Args)
	if err != nil {
		r.Failure = err.Error()
		return r
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "NO_COLOR=1", "DENO_DIR=/tmp/.deno",
		"HARNESS_RUN_ID=" + sb.RunID, "SKILL_NAME=" + s.Name, "SKILL_DIR=" + skillDir, "HARNESS_FORGE_TEST=1"}
	var stdin []byte
	if t.Stdin != "" {
		stdin = []byte(t.Stdin)
	}
	// The test runs with exactly the draft's manifest, over its copy.
	cw, err := workspace.Open(wsCopy, ws.Sandbox, ".", nil)
	if err != nil {
		r.Failure = "the test did not start: " + err.Error()
		return r
	}
	defer cw.Close()
	if err := cw.KeepReadOnly(grant.ReadOnlyPaths(wsCopy, nil, nil, nil)...); err != nil {
		r.Failure = "the test did not start: " + err.Error()
		return r
	}
	if why := draftExecPaths(s); why != "" {
		r.Failure = why
		return r
	}
	g, err := grant.For(grant.Request{Skill: s, Workspace: cw, Backend: sb.Backend})
	if err != nil {
		r.Failure = "the test did not start: " + err.Error()
		return r
	}
	r.Grant = &g.Record
	got, err := scripts.Run(ctx, sb.Backend, scripts.Spec{
		Argv: cmd, Env: env, Path: os.Getenv("PATH"), Cwd: wsDir,
		Mounts:    []scripts.Mount{g.Mount, {Host: skillCopy, Sandbox: "/skills/forge/" + s.Name}},
		LimitExec: g.LimitExec, Exec: g.Exec, ExecTemp: g.ExecTemp,
		Helper: sb.Helper, Timeout: testTimeout, Limits: scripts.Limits{Memory: sb.MemoryLimit}, Stdin: stdin,
	})
	if err != nil {
		r.Failure = "the test did not start: " + err.Error()
		return r
	}
	r.ExitCode, r.DurationMs, r.Truncated = got.ExitCode, got.Duration.Milliseconds(), got.Truncated
	r.Stdout, r.Stderr = bounded(got.Stdout), bounded(got.Stderr)
	r.Failure = judge(t.Expect, got)
	r.Passed = r.Failure == ""
	if !r.Passed && g.Record.Declared {
		r.Failure += fmt.Sprintf(" (the test ran under the draft's permission manifest: it sees the workspace read-only at %s and read-write at %s, nothing else of it, and may execute only its interpreter and %s; declare what it needs in permissions)",
			orNothing(g.Record.Read), orNothing(g.Record.Write), orNothing(g.Record.Exec))
	}
	return r
}

// draftExecPaths says why a draft's manifest may not run its tests
// ("" when it may): its exec entries may name programs on PATH, not
// paths. The manifest is the model's own and the tests run before a
// person has seen it; an absolute directory or file there is bound into
// the test's sandbox, and the test's output goes back to the model, so
// a path would show the model any host directory the sandbox user may
// read (the operator's home, where harness is not root).
func draftExecPaths(s *skills.Skill) string {
	perms, err := skills.PermissionsOf(s.Frontmatter)
	if err != nil || perms == nil {
		return ""
	}
	var paths []string
	for _, e := range perms.Exec {
		if entry, err := skills.ExecEntryOf(e); err == nil && entry.Path != "" {
			paths = append(paths, e)
		}
	}
	if len(paths) == 0 {
		return ""
	}
	return fmt.Sprintf("the test did not start: the draft's permission manifest names %s to execute; a draft's manifest may name programs on PATH only, since its tests run before a person has seen it: approve the draft (harness skills approve) to give it paths", strings.Join(paths, ", "))
}

// judge compares what a test did with what it expected; "" is a pass.
func judge(e Expect, got *scripts.Result) string {
	want := 0
	if e.ExitCode != nil {
		want = *e.ExitCode
	}
	var fails []string
	switch {
	case got.TimedOut:
		fails = append(fails, fmt.Sprintf("timed out after %s", testTimeout))
	case got.MemoryExceeded:
		fails = append(fails, "exceeded the memory limit")
	case got.ExitCode != want:
		fails = append(fails, fmt.Sprintf("exit code %d, expected %d", got.ExitCode, want))
	}
	stdout := string(got.Stdout)
	if e.StdoutContains != "" && !strings.Contains(stdout, e.StdoutContains) {
		fails = append(fails, fmt.Sprintf("stdout does not contain %q", e.StdoutContains))
	}
	if e.StdoutRegex != "" {
		re, err := regexp.Compile(e.StdoutRegex)
		switch {
		case err != nil:
			fails = append(fails, fmt.Sprintf("stdoutRegex %q does not compile: %v", e.StdoutRegex, err))
		case !re.MatchString(stdout):
			fails = append(fails, fmt.Sprintf("stdout does not match %q", e.StdoutRegex))
		}
	}
	return strings.Join(fails, "; ")
}

func bounded(b []byte) string {
	if len(b) > maxShownOutput {
		return string(b[:maxShownOutput]) + fmt.Sprintf("\n[... %d more bytes]", len(b)-maxShownOutput)
	}
	return string(b)
}

// copyTree copies regular files, directories and symbolic links (as
// links) from src to dst, skipping the paths in skip (the run directory,
// other protected paths), within the copy bounds.
func copyTree(src, dst string, skip []string) error {
	files, bytes := 0, int64(0)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s || strings.HasPrefix(p, s+string(filepath.Separator)) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return nil
		}
		files++
		bytes += info.Size()
		if files > maxCopyFiles || bytes > maxCopyBytes {
			return fmt.Errorf("%w (over %d files or %d MiB)", errCopyTooLarge, maxCopyFiles, maxCopyBytes>>20)
		}
		in, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm()|0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// readOnly makes a copied draft read-only for everyone, so a test cannot
// change the skill it tests.
func readOnly(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		mode := os.FileMode(0o444)
		if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
			mode = 0o555
		}
		os.Chmod(p, mode)
		return nil
	})
	scripts.SealDirs(dir)
}

func orNothing(ps []string) string {
	if len(ps) == 0 {
		return "nothing"
	}
	return "[" + strings.Join(ps, ", ") + "]"
}
