package discovery

import (
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/retrieval"
	"github.com/harness-dev/harness/skills"
)

// FromLocal is where a candidate from the operator's own roots comes from.
const FromLocal = "local"

// Candidate is one skill discovery offers: what it is, where it comes
// from (FromLocal or an index's name) and whether it is installed.
type Candidate struct {
	Entry
	From  string  `json:"from"`
	Score float64 `json:"score"`
	// Installed is "" (not in the roots), "yes" (the same digest, or a
	// local skill) or "another version".
	Installed string `json:"installed,omitempty"`
	// Risk is the local skill's tier (unknown for an index entry until it
	// is fetched).
	Risk string `json:"risk,omitempty"`
}

// Local are the candidates a registry's own skills make.
func Local(reg *skills.Registry) []Candidate {
	var out []Candidate
	for i := range reg.Skills {
		s := &reg.Skills[i]
		if s.ShadowedBy != "" {
			continue
		}
		out = append(out, Candidate{Entry: Entry{Name: s.Name, Description: s.Description, Source: s.SkillDir, Digest: s.Version()},
			From: FromLocal, Installed: "yes"})
	}
	return out
}

// FromIndex are the candidates an index makes, marked installed by what
// the roots hold.
func FromIndex(name string, ix *Index, installed map[string]artifacts.Digest) []Candidate {
	var out []Candidate
	for _, e := range ix.Skills {
		c := Candidate{Entry: e, From: name}
		if d, ok := installed[e.Name]; ok {
			c.Installed = "another version"
			if e.Digest == "" || d == e.Digest {
				c.Installed = "yes"
			}
		}
		out = append(out, c)
	}
	return out
}

// Rank orders candidates for a need with the project's BM25 over name and
// description, best first, at most k.
func Rank(query string, cands []Candidate, k int) []Candidate {
	docs := make([]retrieval.Doc, len(cands))
	for i, c := range cands {
		docs[i] = retrieval.Doc{Name: c.Name, Description: c.Description}
	}
	var out []Candidate
	for _, h := range retrieval.Build(docs).Search(query, k) {
		c := cands[h.Doc]
		c.Score = h.Score
		out = append(out, c)
	}
	return out
}
