package scripts

// Where the dynamic loader finds libraries: its search path and its cache,
// read as the loader reads them.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// shebangOf is the interpreter on a #! line ("" if none).
func shebangOf(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	if fields := strings.Fields(strings.TrimPrefix(line, "#!")); strings.HasPrefix(line, "#!") && len(fields) > 0 {
		return fields[0]
	}
	return ""
}

// librarySearchPath is where the loader looks for a library the cache
// does not name: the directories of /etc/ld.so.conf (and what it
// includes), then the system's own.
func librarySearchPath() []string {
	var dirs []string
	seen := map[string]bool{}
	var read func(string, int)
	read = func(conf string, depth int) {
		if depth > 8 {
			return
		}
		raw, err := os.ReadFile(conf)
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(raw), "\n") {
			line, _, _ = strings.Cut(line, "#")
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "include"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				pattern := strings.TrimSpace(rest)
				if !filepath.IsAbs(pattern) {
					pattern = filepath.Join(filepath.Dir(conf), pattern)
				}
				matches, _ := filepath.Glob(pattern)
				slices.Sort(matches)
				for _, m := range matches {
					read(m, depth+1)
				}
				continue
			}
			if line != "" && filepath.IsAbs(line) && !seen[line] {
				seen[line] = true
				dirs = append(dirs, line)
			}
		}
	}
	read("/etc/ld.so.conf", 0)
	for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// ldCacheMagic starts the format of ld.so.cache that glibc writes since
// 2.32 (and, after the old format, before that).
var ldCacheMagic = []byte("glibc-ld.so.cache1.1")

// readLdCache maps each library name in the cache at p to the paths the
// cache gives it, for this machine's architecture; nil when it cannot be
// read (the loader then searches the directories too).
func readLdCache(p string) map[string][]string {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	m, err := parseLdCache(raw)
	if err != nil {
		return nil
	}
	return m
}

func parseLdCache(raw []byte) (map[string][]string, error) {
	start := bytes.Index(raw, ldCacheMagic)
	if start < 0 {
		return nil, errors.New("not an ld.so.cache of the glibc 2.32 format")
	}
	hdr := raw[start:]
	const headerLen, entryLen = 48, 24
	if len(hdr) < headerLen {
		return nil, errors.New("short ld.so.cache")
	}
	n := int(binary.LittleEndian.Uint32(hdr[20:]))
	if n < 0 || n > (len(hdr)-headerLen)/entryLen {
		return nil, errors.New("ld.so.cache counts more entries than it holds")
	}
	str := func(off uint32) (string, bool) {
		// Offsets count from the start of the new-format header.
		if int(off) >= len(hdr) {
			return "", false
		}
		s := hdr[off:]
		end := bytes.IndexByte(s, 0)
		if end < 0 {
			return "", false
		}
		return string(s[:end]), true
	}
	out := map[string][]string{}
	for i := range n {
		e := hdr[headerLen+i*entryLen:]
		if int32(binary.LittleEndian.Uint32(e[0:])) != ldCacheX8664 {
			continue
		}
		key, ok1 := str(binary.LittleEndian.Uint32(e[4:]))
		val, ok2 := str(binary.LittleEndian.Uint32(e[8:]))
		if ok1 && ok2 && filepath.IsAbs(val) && !slices.Contains(out[key], val) {
			out[key] = append(out[key], val)
		}
	}
	return out, nil
}
