package grant

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxGitfile bounds what is read of a .git file or a commondir file: git
// writes one short line; anything longer is not one of git's.
const maxGitfile = 4096

// ParseGitfile reads the directory a .git file names ("gitdir: PATH"), as
// git does (read_gitfile): the whole content after the prefix, trailing
// white space trimmed, so a path with a newline in it is the path git
// would follow. ok is false for what git would not follow (no prefix, an
// empty or NUL path). A relative PATH is relative to the directory
// holding the file. Leading spaces are trimmed too ("gitdir:PATH",
// which git refuses, is read all the same: protecting a path git would
// not use costs nothing).
func ParseGitfile(b []byte) (target string, ok bool) {
	if len(b) > maxGitfile {
		return "", false
	}
	rest, found := bytes.CutPrefix(b, []byte("gitdir:"))
	if !found {
		return "", false
	}
	target = strings.TrimSpace(string(rest))
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return "", false
	}
	return target, true
}

// gitdirOf is the clean absolute directory the .git file dotGit names, ""
// when dotGit is not such a file. A link is never followed: a .git that
// is a link is protected by where it leads, not read as a file.
func gitdirOf(dotGit string) string {
	b, ok := readSmall(dotGit)
	if !ok {
		return ""
	}
	target, ok := ParseGitfile(b)
	if !ok {
		return ""
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(dotGit), target)
	}
	return filepath.Clean(target)
}

// commondirOf is the main repository's directory a worktree's gitdir
// names in its commondir file ("" when it has none): hooks and config
// live there.
func commondirOf(gitdir string) string {
	b, ok := readSmall(filepath.Join(gitdir, "commondir"))
	if !ok {
		return ""
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	common := strings.TrimSpace(string(line))
	if common == "" || strings.IndexByte(common, 0) >= 0 {
		return ""
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	return filepath.Clean(common)
}

// readSmall reads the regular file p, never through a final link and
// never more than maxGitfile bytes (a FIFO named .git must not block the
// run start).
func readSmall(p string) ([]byte, bool) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGitfile {
		return nil, false
	}
	b := make([]byte, maxGitfile+1)
	n, _ := f.Read(b)
	if n > maxGitfile {
		return nil, false
	}
	return b[:n], true
}

// A repository's config can name files that git runs or reads as config,
// and those can lie in the workspace, outside every .git: husky sets
// core.hooksPath = .husky/_, a project shares settings through
// include.path = ../.gitconfig. Writing there plants what git runs on the
// host as surely as writing the .git itself, so each such target inside
// the workspace is a control path too.

// maxIncludeDepth bounds how deep includes are followed (git's own limit
// is 10).
const maxIncludeDepth = 10

// configTargets are the paths the config file cfg names that git runs or
// reads as config: core.hooksPath (relative to worktree, where hooks run),
// include.path and includeIf.*.path (relative to the including file, and
// followed), and a program given as a path for core.fsmonitor,
// core.sshCommand, core.editor, core.pager (relative to worktree).
func configTargets(cfg, worktree string, depth int, out *[]string) {
	if depth > maxIncludeDepth {
		return
	}
	b, ok := readSmall(cfg)
	if !ok {
		return
	}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			head := strings.TrimSpace(line[1:end])
			name, _, _ := strings.Cut(head, " ")
			if n, _, ok := strings.Cut(name, "."); ok {
				name = n
			}
			section = strings.ToLower(name)
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = configValue(val)
		if val == "" || strings.IndexByte(val, 0) >= 0 || strings.HasPrefix(val, "~") {
			continue
		}
		switch {
		case (section == "include" || section == "includeif") && key == "path":
			p := val
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(cfg), p)
			}
			p = filepath.Clean(p)
			*out = append(*out, p)
			configTargets(p, worktree, depth+1, out)
		case section == "core" && key == "hookspath":
			p := val
			if !filepath.IsAbs(p) {
				p = filepath.Join(worktree, p)
			}
			*out = append(*out, filepath.Clean(p))
		case section == "core" && (key == "fsmonitor" || key == "sshcommand" || key == "editor" || key == "pager"):
			prog, _, _ := strings.Cut(val, " ")
			if !strings.Contains(prog, "/") {
				continue
			}
			if !filepath.IsAbs(prog) {
				prog = filepath.Join(worktree, prog)
			}
			*out = append(*out, filepath.Clean(prog))
		}
	}
}

// configValue is a config value without its comment and quotes: enough
// to find a path, not a full parser (a value it misreads names a path
// that protects nothing or one more file, never one less than git reads).
func configValue(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, `"`) {
		if end := strings.IndexByte(v[1:], '"'); end >= 0 {
			return v[1 : end+1]
		}
		return strings.Trim(v, `"`)
	}
	if i := strings.IndexAny(v, "#;"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v
}
