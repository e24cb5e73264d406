package resolve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// there. Only p's ancestors are resolved, from the top down to the first
// that is root: a link below root is left for the caller's open to refuse,
// so that a link a model made inside root cannot carry p out of it
// unseen. The ancestors above root are the operator's.
func Beneath(p, root string) (string, bool) {
	if root == "" {
		return "", false
	}
	p = filepath.Clean(p)
	for a := p; ; a = filepath.Dir(a) {
		if real, err := filepath.EvalSymlinks(a); err == nil && real == root {
			rel, err := filepath.Rel(a, p)
			return rel, err == nil
		}
		if a == filepath.Dir(a) {
			return "", false
		}
	}
}

// readAttachmentBeneath reads rel inside dir under artifacts.OpenBeneath's
// rules (no link, no FIFO or device) and the attachment bound.
func readAttachmentBeneath(dir, rel string) ([]byte, error) {
	f, err := artifacts.OpenBeneath(dir, rel, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, artifacts.ErrOutsideDir) {
			return nil, err
		}
		return nil, errors.New("not a readable file")
	}
	defer f.Close()
	b, err := artifacts.ReadAtMost(f, maxAttachment)
	var tooLarge *artifacts.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("more than %d bytes; at most %d can be attached", maxAttachment, maxAttachment)
	case err != nil:
		return nil, errors.New("not a readable file")
	}
	return b, nil
}

// readAttachment reads one --attach file, judged by the descriptor it
// opened (artifacts.ReadRegular), in the words --attach has always used.
func readAttachment(path string) ([]byte, error) {
	b, err := artifacts.ReadRegular(path, maxAttachment)
	var tooLarge *artifacts.TooLargeError
	switch {
	case errors.As(err, &tooLarge) && tooLarge.Size >= 0:
		return nil, fmt.Errorf("%d bytes; at most %d can be attached", tooLarge.Size, maxAttachment)
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("more than %d bytes; at most %d can be attached", maxAttachment, maxAttachment)
	case err != nil:
		return nil, errors.New("not a readable file")
	}
	return b, nil
}
