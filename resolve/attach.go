package resolve

import (
	"errors"
	"fmt"
	"path/filepath"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// maxAttachment bounds one --attach file: it goes whole into the context.
const maxAttachment = 1 << 20

// Attachments reads each --attach file once, for the run to keep.
func Attachments(paths []string) ([]record.Attachment, error) {
	var out []record.Attachment
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, outcome.Usage("attach_invalid", "--attach %s: %v", p, err)
		}
		b, err := readAttachment(abs)
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
