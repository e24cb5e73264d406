package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
)

// ResourceRead is what reading a resource at call time observed, beside
// what the snapshot recorded.
type ResourceRead struct {
	Resource       *Resource // the snapshot's record
	ObservedDigest artifacts.Digest
	ObservedSize   int64
	DigestMatches  bool // digest and size equal the snapshot
	ContentKind    string
	Content        []byte // text only, at most maxBytes, cut on a rune boundary
	Truncated      bool
}

// CheckResourcePath validates a resource path from a caller: relative,
// normalized, slash-separated, no NUL and no "..".
func CheckResourcePath(rel string) error {
	bad := func(why string) error {
		return &Refusal{Code: "resource_path_invalid", Msg: fmt.Sprintf("resource path %q %s: give a path relative to the skill directory, such as references/guide.md", rel, why)}
	}
	switch {
	case rel == "":
		return bad("is empty")
	case strings.IndexByte(rel, 0) >= 0:
		return bad("contains a NUL byte")
	case strings.HasPrefix(rel, "/"):
		return bad("is absolute")
	case path.Clean(rel) != rel:
		return bad("is not normalized")
	case rel == ".." || strings.HasPrefix(rel, "../"):
		return bad("leaves the skill directory")
	}
	return nil
}

// ReadResource reads a snapshotted resource of s as it is now. The file
// must still be a regular file inside the skill directory (checked by the
// kernel: the open is confined beneath the skill directory, which is
// itself opened beneath the root). The whole file is digested; at most
// maxBytes of text are returned.
func ReadResource(s *Skill, rel string, maxBytes int) (*ResourceRead, error) {
	if err := CheckResourcePath(rel); err != nil {
		return nil, err
	}
	res, ok := s.Resource(rel)
	if !ok {
		return nil, &Refusal{Code: "resource_not_indexed", Msg: fmt.Sprintf("%s is not a resource of skill '%s' in the run-start snapshot; only indexed files can be read", rel, s.Name)}
	}
	f, err := openInSkill(s, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Refusal{Code: "resource_not_found", Msg: fmt.Sprintf("%s: %v", rel, err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Refusal{Code: "resource_not_file", Msg: fmt.Sprintf("%s is no longer a regular file (%s)", rel, fi.Mode().Type())}
	}
	rr := &ResourceRead{Resource: res}
	h := artifacts.NewHasher()
	var head bytes.Buffer
	keep := max(maxBytes, sniffLen)
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if room := keep - head.Len(); room > 0 {
				head.Write(buf[:min(n, room)])
			}
			rr.ObservedSize += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &Refusal{Code: "resource_not_found", Msg: fmt.Sprintf("read %s: %v", rel, err)}
		}
	}
	rr.ObservedDigest = h.Digest()
	rr.DigestMatches = rr.ObservedDigest == res.Digest && rr.ObservedSize == res.Size
	b := head.Bytes()
	sniff := b[:min(len(b), sniffLen)]
	if isBinary(sniff, rr.ObservedSize > int64(len(sniff))) {
		rr.ContentKind = "binary"
		return rr, nil
	}
	rr.ContentKind = "text"
	if len(b) > maxBytes {
		b = b[:maxBytes]
	}
	if int64(len(b)) < rr.ObservedSize {
		rr.Truncated = true
		for len(b) > 0 && !utf8.Valid(b) {
			// Cut back to the last rune boundary.
			_, size := utf8.DecodeLastRune(b)
			b = b[:len(b)-max(size, 1)]
		}
	}
	rr.Content = b
	return rr, nil
}

// openInSkill opens rel confined beneath the skill directory, which is
// opened confined beneath the root: a symlink swapped in after the
// snapshot cannot lead outside either.
func openInSkill(s *Skill, rel string) (*os.File, error) {
	outside := &Refusal{Code: "resource_outside_root", Msg: fmt.Sprintf("%s resolves outside the directory of skill '%s'; refusing to read it", rel, s.Name)}
	root, err := os.Open(s.Root)
	if err != nil {
		return nil, &Refusal{Code: "resource_not_found", Msg: fmt.Sprintf("skills root %s: %v", s.Root, err)}
	}
	defer root.Close()
	dirRel, err := filepath.Rel(s.Root, s.SkillDir)
	if err != nil {
		return nil, outside
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	dfd, err := unix.Openat2(int(root.Fd()), dirRel, &how)
	if err != nil {
		return nil, openRefusal(err, rel, outside)
	}
	dir := os.NewFile(uintptr(dfd), s.SkillDir)
	defer dir.Close()
	how.Flags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	fd, err := unix.Openat2(int(dir.Fd()), rel, &how)
	if err != nil {
		return nil, openRefusal(err, rel, outside)
	}
	return os.NewFile(uintptr(fd), filepath.Join(s.SkillDir, rel)), nil
}

func openRefusal(err error, rel string, outside *Refusal) error {
	switch {
	case errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP):
		return outside
	case errors.Is(err, fs.ErrNotExist):
		return &Refusal{Code: "resource_not_found", Msg: fmt.Sprintf("%s no longer exists", rel)}
	}
	return &Refusal{Code: "resource_not_found", Msg: fmt.Sprintf("open %s: %v", rel, err)}
}

// ReadSkillFileCurrent reads SKILL.md as it is now, whether or not it
// still matches the snapshot; matches says which. It is for runs where
// the operator allowed drift.
func ReadSkillFileCurrent(s *Skill) (data []byte, matches bool, err error) {
	data, err = ReadSkillFile(s)
	if err == nil {
		return data, true, nil
	}
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Code != "skill_snapshot_mismatch" {
		return nil, false, err
	}
	sc, err := newScanner([]string{s.Root}, "", "", Limits{})
	if err != nil {
		return nil, false, err
	}
	defer sc.close()
	data, err = readRegular(sc.roots[0], relTo(s.Root, s.SkillPath), maxSkillFile)
	return data, false, err
}

// CopyResource streams a resource of s, as it is now, into w and returns
// the digest and size of exactly the bytes written, so a caller can keep
// the copy only when they equal the snapshot.
func CopyResource(s *Skill, rel string, w io.Writer) (artifacts.Digest, int64, error) {
	if err := CheckResourcePath(rel); err != nil {
		return "", 0, err
	}
	f, err := openInSkill(s, rel)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, &Refusal{Code: "resource_not_file", Msg: fmt.Sprintf("%s is no longer a regular file", rel)}
	}
	h := artifacts.NewHasher()
	n, err := io.Copy(io.MultiWriter(w, h), f)
	if err != nil {
		return "", n, err
	}
	return h.Digest(), n, nil
}
