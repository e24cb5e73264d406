package skills

// plainLinks returns the destinations of the links and images of a
// Markdown body, in order, without a Markdown parser, and reports false
// for any body it cannot read that way, which then goes to goldmark.
// Parsing with goldmark was the largest CPU cost left in snapshotting many
// small skills after the YAML fast path (about 10 µs a skill, most of it
// building an AST to find one link).
//
// It accepts only bodies in which every link has one reading: written
// inline as [text](target) on one line, text without brackets, target
// of printable ASCII without spaces, parentheses, quotes, angle brackets,
// backslashes or ampersands. Nothing that hides a link or makes one
// another way may appear anywhere: no backquote or tilde (code spans and
// fences), no indented line (indented code), no '<' or '>' (HTML,
// autolinks, block quotes), no backslash (escapes), no control character
// but the line end, no "]:" (reference definitions, without which
// [text][label] and [text] are not links). FuzzPlainLinks holds it to
// goldmark's result for every body it accepts.
func plainLinks(body []byte, dests []string) ([]string, bool) {
	if !plainMarkdown(body) {
		return nil, false
	}
	open := -1 // the '[' that a "](" on this line would close
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\n':
			open = -1
		case '[':
			if open >= 0 {
				return nil, false // nested or unclosed brackets
			}
			open = i
		case ']':
			if i+1 < len(body) && body[i+1] == ':' {
				return nil, false
			}
			if i+1 == len(body) || body[i+1] != '(' {
				open = -1
				continue
			}
			if open < 0 {
				return nil, false
			}
			end := i + 2
			for end < len(body) && plainTargetByte(body[end]) {
				end++
			}
			if end == len(body) || body[end] != ')' {
				return nil, false
			}
			dests = append(dests, string(body[i+2:end]))
			open = -1
			i = end
		}
	}
	return dests, true
}

// plainMarkdown reports whether body is free of every construct that
// plainLinks leaves to goldmark: code, HTML, block quotes, escapes,
// control characters and indented lines.
func plainMarkdown(body []byte) bool {
	lineStart, indent := true, 0
	for _, c := range body {
		switch {
		case c == '\n':
			lineStart, indent = true, 0
			continue
		case c < 0x20 || c == 0x7f || c == '`' || c == '~' || c == '<' || c == '>' || c == '\\':
			return false
		}
		if lineStart {
			if c == ' ' {
				indent++
				continue
			}
			if indent >= 4 {
				return false
			}
			lineStart = false
		}
	}
	return true
}

// plainTargetByte reports whether c may appear in a link target that
// plainLinks reads: printable ASCII with no meaning in a destination.
func plainTargetByte(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return false
	}
	switch c {
	case '(', ')', '<', '>', '"', '\'', '\\', '&', '[', ']', '`':
		return false
	}
	return true
}
