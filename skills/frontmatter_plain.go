package skills

// plainFrontmatter decodes the frontmatter most skills have (one line
// per key, each value an unquoted string on its own line, as in
// "name: pdf-tools") without the YAML library, and reports false for
// anything else, which then goes to goccy/go-yaml. Parsing YAML was the
// largest CPU cost of snapshotting many small skills (about 20 µs a
// skill, mostly building a token stream and an AST for two lines).
//
// It accepts only what has one reading: ASCII keys and values, a value
// that starts with a letter and holds no character that YAML gives a
// meaning inside a plain scalar (':' and '#'), is not a word YAML
// resolves to a boolean or null, and no repeated key. FuzzPlainFrontmatter
// holds it to the library's result for every input it accepts.
func plainFrontmatter(fm []byte) (map[string]any, bool) {
	m := make(map[string]any, 4)
	for pos := 0; pos < len(fm); {
		end := pos
		for end < len(fm) && fm[end] != '\n' {
			end++
		}
		if end == len(fm) {
			return nil, false // a last line without its line end
		}
		key, value, ok := plainLine(fm[pos:end])
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		m[key] = value
		pos = end + 1
	}
	if len(m) == 0 {
		return nil, false
	}
	return m, true
}

// plainLine splits "key: value" when both are plain words of the kind
// plainFrontmatter accepts.
func plainLine(l []byte) (key, value string, ok bool) {
	i := 0
	for i < len(l) && isKeyByte(l[i], i == 0) {
		i++
	}
	if i == 0 || i+1 >= len(l) || l[i] != ':' || l[i+1] != ' ' {
		return "", "", false
	}
	key = string(l[:i])
	v := l[i+2:]
	for len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	if len(v) == 0 || !isLetter(v[0]) || v[len(v)-1] == ' ' {
		return "", "", false
	}
	for _, b := range v {
		if !isPlainByte(b) {
			return "", "", false
		}
	}
	if reservedWord(v) {
		return "", "", false
	}
	return key, string(v), true
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func isKeyByte(b byte, first bool) bool {
	if isLetter(b) {
		return true
	}
	return !first && (b >= '0' && b <= '9' || b == '-' || b == '_')
}

// isPlainByte is a byte that means itself anywhere after the first in a
// plain scalar.
func isPlainByte(b byte) bool {
	if isLetter(b) || b >= '0' && b <= '9' {
		return true
	}
	switch b {
	case ' ', '.', ',', ';', '(', ')', '/', '_', '-', '\'', '+', '=', '!', '?', '&', '%', '$', '@', '<', '>':
		return true
	}
	return false
}

// reservedWord is a value a YAML parser may resolve to something other
// than a string (YAML 1.2's core schema and 1.1's booleans).
func reservedWord(v []byte) bool {
	if len(v) > 5 {
		return false
	}
	switch string(bytesToLower(v)) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}

func bytesToLower(v []byte) []byte {
	out := make([]byte, len(v))
	for i, b := range v {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		out[i] = b
	}
	return out
}
