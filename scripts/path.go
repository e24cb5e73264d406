package scripts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// eachAncestor calls f with dir and each directory above it, ending with
// "/". dir must be absolute: filepath.Dir of a relative path reaches "."
// and stays there, so a walk up one would never end.
func eachAncestor(dir string, f func(string) error) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q is not an absolute path", dir)
	}
	for d := filepath.Clean(dir); ; {
		if err := f(d); err != nil {
			return err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d = parent
	}
}

// RelativePathEntries are the entries of path (a PATH value) that are not
// absolute, an empty one (the working directory) included. Programs are
// never looked up in them: they name whatever directory harness was
// started in, which a workspace or a skill may have filled.
func RelativePathEntries(path string) []string {
	var rel []string
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) && !slices.Contains(rel, dir) {
			rel = append(rel, dir)
		}
	}
	return rel
}

// quoteAll is entries quoted and joined, for a message.
func quoteAll(entries []string) string {
	q := make([]string, len(entries))
	for i, e := range entries {
		q[i] = fmt.Sprintf("%q", e)
	}
	return strings.Join(q, ", ")
}
