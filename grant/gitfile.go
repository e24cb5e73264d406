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
