// Package skills scans skill roots into a digested registry snapshot:
// discovery, frontmatter, validation diagnostics, the resource index and
// its digests. It knows nothing of models or tools.
package skills
