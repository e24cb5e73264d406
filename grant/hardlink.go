package grant

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/workspace"
)

// maxWriteEntries bounds the entries one grant's read and write paths are
// checked for hard links before a call, all of them together (a variable
// so a test can lower it).
var maxWriteEntries = 100_000

// checkHardLinks refuses a read or write path that holds a regular file
// with more than one name. A hard link is the file itself, not a pointer
// to it: one that already sits in a declared path with its other name
// elsewhere (in a part the skill is not shown, outside the workspace) is
// read, and in a write path written, through by every backend, since the
// sandbox grants the name it sees. The sandbox cannot make one to a file
// it does not show (link(2) across mounts fails, and Landlock refuses the
// reparenting), so only a link made before the call matters (an earlier
// call that saw more of the workspace could), and each call checks. The
// rule is one for both kinds of path. Directories are opened beneath the
// workspace's descriptor and each entry is judged by fstatat on its
// parent's descriptor, without following links; the read-only paths
// inside are not looked at: no call can write them, so no call can have
// planted a link there.
func checkHardLinks(ws *workspace.Workspace, skill string, write, read []string) error {
	left := maxWriteEntries
	for _, p := range append(declared(write, "write"), declared(read, "read")...) {
		found, err := linksUnder(ws, p.rel, &left)
		var ref *workspace.Refusal
		switch {
		case errors.As(err, &ref) && ref.Code == "file_not_found" && p.kind == "read":
			// A read path that does not exist shows nothing.
		case errors.As(err, &ref):
			return &Refusal{Code: ref.Code, Msg: fmt.Sprintf("skill %s declares filesystem.%s %s: %s", skill, p.kind, p.rel, ref.Msg)}
		case errors.Is(err, errTooMany):
			return &Refusal{Code: p.kind + "_path_too_large", Msg: fmt.Sprintf("skill %s declares filesystem.%s %s, whose files, with those of the paths before it, are more than the %d harness checks for hard links before a call; nothing was run. Declare narrower paths", skill, p.kind, p.rel, maxWriteEntries)}
		case err != nil:
			return &Refusal{Code: "grant_failed", Msg: fmt.Sprintf("skill %s declares filesystem.%s %s, which could not be checked for hard links: %v; nothing was run", skill, p.kind, p.rel, err)}
		case found != "" && p.kind == "write":
			return &Refusal{Code: "write_path_hardlink", Msg: fmt.Sprintf("skill %s declares filesystem.write %s, which holds %s, a hard link (a file with another name elsewhere): writing it would change that file too, wherever it is; nothing was run. Make it a file of its own (copy it to a new name and rename the copy over it) or remove it", skill, p.rel, ws.SandboxPath(found))}
		case found != "":
			return &Refusal{Code: "read_path_hardlink", Msg: fmt.Sprintf("skill %s declares filesystem.read %s, which holds %s, a hard link (a file with another name elsewhere): reading it would show that file, which the manifest may not grant; nothing was run. Make it a file of its own (copy it to a new name and rename the copy over it) or remove it", skill, p.rel, ws.SandboxPath(found))}
		}
	}
	return nil
}

type declaredPath struct{ rel, kind string }

func declared(rels []string, kind string) []declaredPath {
	out := make([]declaredPath, 0, len(rels))
	for _, rel := range rels {
		out = append(out, declaredPath{rel, kind})
	}
	return out
}

// linksUnder returns rel itself when it is a regular file with more than
// one link, else the first such file beneath the directory rel.
func linksUnder(ws *workspace.Workspace, rel string, left *int) (string, error) {
	if workspace.Covers(ws.ReadOnlyRel(), rel) {
		return "", nil
	}
	f, err := ws.Open(rel)
	if err != nil {
		return "", workspace.AsRefusal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if *left--; *left < 0 {
			return "", errTooMany
		}
		if st.Nlink > 1 {
			return rel, nil
		}
		return "", nil
	case unix.S_IFDIR:
		return walkLinks(f, rel, ws.ReadOnlyRel(), left)
	}
	return "", nil
}

var errTooMany = errors.New("too many entries")

// walkLinks returns the first regular file under d (the directory rel)
// with more than one link, or "", leaving out the readOnly paths.
func walkLinks(d *os.File, rel string, readOnly []string, left *int) (string, error) {
	fd := int(d.Fd())
	for {
		names, err := d.Readdirnames(512)
		if err == io.EOF || len(names) == 0 && err == nil {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		for _, name := range names {
			if *left--; *left < 0 {
				return "", errTooMany
			}
			sub := path.Join(rel, name)
			if workspace.Covers(readOnly, sub) {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue // gone since it was listed
				}
				return "", fmt.Errorf("%s: %w", sub, err)
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				if st.Nlink > 1 {
					return sub, nil
				}
			case unix.S_IFDIR:
				cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
						continue // replaced since it was looked at
					}
					return "", fmt.Errorf("%s: %w", sub, err)
				}
				child := os.NewFile(uintptr(cfd), sub)
				found, err := walkLinks(child, sub, readOnly, left)
				child.Close()
				if found != "" || err != nil {
					return found, err
				}
			}
		}
	}
}
