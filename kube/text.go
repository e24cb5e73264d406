package kube

import (
	"fmt"
	"unicode/utf8"
)

// CheckText refuses a value a generated manifest or workflow could not
// carry as written: invalid UTF-8, a control character (a carriage
// return, NUL, escape, DEL, tab and the C1 range, U+0085 among them) or a
// line or paragraph separator (U+2028, U+2029), which YAML 1.1 readers
// (PyYAML, yaml.v3, actionlint) take as a line break, so a value could
// start a key or a document of its own. A newline is refused unless
// multiline: a prompt may hold lines, a path or a flag may not. The
// noncharacters U+FFFE and U+FFFF, outside YAML's printable set, are refused.
func CheckText(s string, multiline bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if r == '\n' && multiline {
			continue
		}
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 {
			return fmt.Errorf("%q holds the control character %U, which a YAML reader may take as a line break or refuse", s, r)
		}
		// YAML's printable set leaves out these two noncharacters: a
		// reader refuses the whole document.
		if r == 0xfffe || r == 0xffff {
			return fmt.Errorf("%q holds the noncharacter %U, which a YAML reader refuses", s, r)
		}
	}
	return nil
}
