// Package retrieval finds skills by what a task needs: a BM25 index over
// each skill's name, description and headings, tokenized and stemmed for
// English. It is built from a registry snapshot, so what it can find is
// covered by the registry digest and by resume's drift check.
package retrieval

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/harness-dev/harness/skills"
)

// BM25 parameters: the usual ones. Field weights count a term of the name
// three times and of the description twice, since those are written to
// be matched; headings once.
const (
	k1           = 1.2
	b            = 0.75
	nameWeight   = 3
	descWeight   = 2
	headingWeight = 1
)

// Doc is one skill as the index sees it.
type Doc struct {
	Name        string
	Description string
	Headings    []string
}

// Hit is one ranked result.
type Hit struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

type posting struct {
	doc int32
	tf  float32
}

// Index is a BM25 index. It is immutable once built and safe for
// concurrent searches.
type Index struct {
	docs     []Doc
	postings map[string][]posting
	lens     []float32
	avgLen   float64
}

// FromRegistry indexes what the catalog could offer: effective,
// model-invocable, eligible skills.
func FromRegistry(reg *skills.Registry) *Index {
	var docs []Doc
	if reg != nil {
		for i := range reg.Skills {
			s := &reg.Skills[i]
			if s.ShadowedBy == "" && s.ModelInvocable() && s.IsEligible() {
				docs = append(docs, Doc{Name: s.Name, Description: s.Description, Headings: s.Headings})
			}
		}
	}
	return Build(docs)
}

// Build indexes docs.
func Build(docs []Doc) *Index {
	ix := &Index{docs: docs, postings: map[string][]posting{}, lens: make([]float32, len(docs))}
	var total float64
	tf := map[string]float32{}
	// Skills share most of their words; stemming is the costly part, so
	// each distinct word is stemmed once per build.
	stems := map[string]string{}
	for i, d := range docs {
		clear(tf)
		var n float32
		add := func(text string, w float32) {
			for _, t := range terms(text, stems) {
				tf[t] += w
				n += w
			}
		}
		add(strings.NewReplacer("-", " ", "_", " ").Replace(d.Name), nameWeight)
		add(d.Description, descWeight)
		for _, h := range d.Headings {
			add(h, headingWeight)
		}
		for t, f := range tf {
			ix.postings[t] = append(ix.postings[t], posting{int32(i), f})
		}
		ix.lens[i] = n
		total += float64(n)
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	return ix
}

// Len is the number of indexed skills.
func (ix *Index) Len() int { return len(ix.docs) }

// Search ranks the skills for query and returns at most k, best first
// (ties by name). Skills that share no term with the query are left out.
func (ix *Index) Search(query string, k int) []Hit {
	if k <= 0 || len(ix.docs) == 0 {
		return nil
	}
	scores := map[int32]float64{}
	n := float64(len(ix.docs))
	seen := map[string]bool{}
	for _, t := range Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := tf + k1*(1-b+b*float64(ix.lens[p.doc])/ix.avgLen)
			scores[p.doc] += idf * tf * (k1 + 1) / norm
		}
	}
	hits := make([]Hit, 0, len(scores))
	for d, s := range scores {
		hits = append(hits, Hit{Name: ix.docs[d].Name, Description: ix.docs[d].Description, Score: math.Round(s*1000) / 1000})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// Terms tokenizes text for the index: lower case, split at anything that
// is not a letter or digit, English stop words dropped, each word reduced
// to its Porter2 (Snowball) stem.
func Terms(text string) []string { return terms(text, nil) }

func terms(text string, stems map[string]string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if s, ok := stems[w]; ok {
			if s != "" {
				out = append(out, s)
			}
			continue
		}
		s := ""
		if !english.IsStopWord(w) {
			s = english.Stem(w, false)
		}
		if stems != nil {
			stems[w] = s
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
