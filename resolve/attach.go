package resolve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// maxAttachment bounds one --attach file: it goes whole into the context.
const maxAttachment = 1 << 20

// Attachments reads each --attach file once, for the run to keep. A
// file in the workspace (ws, links resolved) is read beneath it without
// following any link: what a model, a script or an earlier phase left
// there is not the operator's word, and a link it made to a host file
// would otherwise carry that file into the context and to the provider.
// A path elsewhere is the operator's own and is read as named.
func Attachments(paths []string, ws string) ([]record.Attachment, error) {
	var out []record.Attachment
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, outcome.Usage("attach_invalid", "--attach %s: %v", p, err)
		}
		var b []byte
		if rel, ok := Beneath(abs, ws); ok && ws != "" {
			b, err = readAttachmentBeneath(ws, rel)
			if errors.Is(err, artifacts.ErrOutsideDir) {
				return nil, outcome.Usage("attach_link_refused", "--attach %s is in the workspace and goes through a symbolic link: a file there is attached only as itself, since a model or a script may have made the link; attach the file it points to by its own path", p)
			}
		} else {
			b, err = readAttachment(abs)
		}
		if err != nil {
			return nil, outcome.Usage("attach_invalid", "--attach %s: %v", p, err)
		}
		if !utf8.Valid(b) {
			return nil, outcome.Usage("attach_invalid", "--attach %s is not UTF-8 text", p)
		}
		out = append(out, record.Attachment{Path: abs, Digest: artifacts.DigestBytes(b), Content: string(b)})
	}
	return out, nil
}

// Beneath says whether the absolute path p names something inside the
// directory root (itself resolved, with no link in it), and its path
// there. p is resolved from the top, a component at a time, following
// links only until the path so far is root: what lies below root is kept
// as written, for the caller's open beneath root to refuse any link in
// it, so that a link a model made inside root cannot carry p out of it
// (or to another part of it) unseen, however p reaches root (through an
// operator's link to the workspace or into one of its directories).
func Beneath(p, root string) (string, bool) {
	if root == "" || !filepath.IsAbs(p) {
		return "", false
	}
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	for links := 0; ; {
		if cur == root {
			// What is left is below root unless it climbs back out (a
			// link's target may say "..").
			if rel := filepath.Clean(filepath.Join(append([]string{"."}, rest...)...)); rel != ".." && !strings.HasPrefix(rel, "../") {
				return rel, true
			}
		}
		if len(rest) == 0 || (len(rest) == 1 && rest[0] == "") {
			return "", false
		}
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			// A missing part, or a file or directory: the rest is below
			// it, as written.
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", false
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
}

// readAttachmentBeneath reads rel inside dir under artifacts.OpenBeneath's
// rules (no link, no FIFO or device) and the attachment bound.
func readAttachmentBeneath(dir, rel string) ([]byte, error) {
	b, err := artifacts.ReadBeneathAtMost(dir, rel, maxAttachment)
	if errors.Is(err, artifacts.ErrOutsideDir) {
		return nil, err
	}
	return b, attachmentError(err)
}

// readAttachment reads one --attach file, judged by the descriptor it
// opened (artifacts.ReadRegular), in the words --attach has always used.
func readAttachment(path string) ([]byte, error) {
	b, err := artifacts.ReadRegular(path, maxAttachment)
	return b, attachmentError(err)
}

// attachmentError says why a file could not be attached, in the words
// --attach has always used.
func attachmentError(err error) error {
	var tooLarge *artifacts.TooLargeError
	switch {
	case errors.As(err, &tooLarge) && tooLarge.Size >= 0:
		return fmt.Errorf("%d bytes; at most %d can be attached", tooLarge.Size, maxAttachment)
	case errors.As(err, &tooLarge):
		return fmt.Errorf("more than %d bytes; at most %d can be attached", maxAttachment, maxAttachment)
	case err != nil:
		return errors.New("not a readable file")
	}
	return nil
}
