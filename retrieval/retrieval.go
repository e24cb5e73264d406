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
	"unicode/utf8"

	"github.com/kljensen/snowball/english"

	"github.com/harness-dev/harness/skills"
)

// BM25 parameters: the usual ones. Field weights count a term of the name
// three times and of the description twice, since those are written to
// be matched; headings once.
const (
	k1            = 1.2
	b             = 0.75
	nameWeight    = 3
	descWeight    = 2
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
	// Doc is the hit's position in the documents the index was built
	// from, for callers that index more than names (Search sets it).
	Doc int `json:"-"`
}

type posting struct {
	doc int32
	tf  float32
}

// Index is a BM25 index. It is immutable once built and safe for
// concurrent searches.
type Index struct {
	docs     []Doc
	terms    map[string]int32 // stem -> term id
	postings [][]posting      // by term id
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

// builder turns words into term ids. Skills share most of their words and
// stemming is the costly part, so each distinct word is stemmed once per
// build (words maps a lower-cased word to its term id, -1 for a stop word).
type builder struct {
	ix    *Index
	words map[string]int32
	buf   []byte
}

func (bd *builder) term(word []byte) int32 {
	if id, ok := bd.words[string(word)]; ok {
		return id
	}
	w := string(word)
	id := int32(-1)
	if !english.IsStopWord(w) {
		stem := english.Stem(w, false)
		var ok bool
		if id, ok = bd.ix.terms[stem]; !ok {
			id = int32(len(bd.ix.postings))
			bd.ix.terms[stem] = id
			bd.ix.postings = append(bd.ix.postings, nil)
		}
	}
	bd.words[w] = id
	return id
}

// each calls f with every lower-cased word of text.
func (bd *builder) each(text string, f func(word []byte)) {
	bd.buf = bd.buf[:0]
	flush := func() {
		if len(bd.buf) > 0 {
			f(bd.buf)
			bd.buf = bd.buf[:0]
		}
	}
	for _, r := range text {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9'):
			bd.buf = append(bd.buf, byte(r))
		case r >= 'A' && r <= 'Z':
			bd.buf = append(bd.buf, byte(r+'a'-'A'))
		case r >= 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			bd.buf = utf8.AppendRune(bd.buf, unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
}

// Build indexes docs.
func Build(docs []Doc) *Index {
	ix := &Index{docs: docs, terms: map[string]int32{}, lens: make([]float32, len(docs))}
	bd := &builder{ix: ix, words: map[string]int32{}}
	var total float64
	type hit struct {
		id int32
		w  float32
	}
	var hits []hit
	for i, d := range docs {
		hits = hits[:0]
		var n float32
		add := func(text string, w float32) {
			bd.each(text, func(word []byte) {
				if id := bd.term(word); id >= 0 {
					hits = append(hits, hit{id, w})
					n += w
				}
			})
		}
		add(strings.NewReplacer("-", " ", "_", " ").Replace(d.Name), nameWeight)
		add(d.Description, descWeight)
		for _, h := range d.Headings {
			add(h, headingWeight)
		}
		slices.SortFunc(hits, func(a, b hit) int { return int(a.id - b.id) })
		for j := 0; j < len(hits); {
			id, tf := hits[j].id, float32(0)
			for ; j < len(hits) && hits[j].id == id; j++ {
				tf += hits[j].w
			}
			ix.postings[id] = append(ix.postings[id], posting{int32(i), tf})
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
		id, ok := ix.terms[t]
		if !ok {
			continue
		}
		ps := ix.postings[id]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := tf + k1*(1-b+b*float64(ix.lens[p.doc])/ix.avgLen)
			scores[p.doc] += idf * tf * (k1 + 1) / norm
		}
	}
	hits := make([]Hit, 0, len(scores))
	for d, s := range scores {
		hits = append(hits, Hit{Name: ix.docs[d].Name, Description: ix.docs[d].Description, Score: math.Round(s*1000) / 1000, Doc: int(d)})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return a.Doc - b.Doc
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// Terms tokenizes text as the index does: lower case, split at anything
// that is not a letter or digit, English stop words dropped, each word
// reduced to its Porter2 (Snowball) stem.
func Terms(text string) []string {
	bd := &builder{}
	var out []string
	bd.each(text, func(word []byte) {
		w := string(word)
		if !english.IsStopWord(w) {
			out = append(out, english.Stem(w, false))
		}
	})
	return out
}

// Embed returns one vector per text, in order (a cache in front of an
// embeddings endpoint).
type Embed func(texts []string) ([][]float64, error)

// DocText is what a skill's vector is computed from.
func DocText(d Doc) string { return d.Name + ": " + d.Description }

// rrfK is the constant of reciprocal rank fusion: large enough that the
// first few ranks of either list do not swamp the other.
const rrfK = 60

// SearchFused ranks by BM25 and by cosine similarity of the query's vector
// to each skill's, and fuses the two rankings by reciprocal rank fusion
// (the sum of 1/(60+rank) over both lists). vecs are the skills' vectors
// in the index's order.
func (ix *Index) SearchFused(query string, qvec []float64, vecs [][]float64, k int) []Hit {
	if k <= 0 || len(ix.docs) == 0 {
		return nil
	}
	depth := max(4*k, 50)
	fused := map[string]float64{}
	for r, h := range ix.Search(query, depth) {
		fused[h.Name] += 1 / float64(rrfK+r+1)
	}
	type sim struct {
		i int
		s float64
	}
	sims := make([]sim, 0, len(vecs))
	for i, v := range vecs {
		sims = append(sims, sim{i, cosine(qvec, v)})
	}
	slices.SortFunc(sims, func(a, b sim) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	for r, s := range sims[:min(depth, len(sims))] {
		fused[ix.docs[s.i].Name] += 1 / float64(rrfK+r+1)
	}
	byName := make(map[string]Doc, len(ix.docs))
	for _, d := range ix.docs {
		byName[d.Name] = d
	}
	hits := make([]Hit, 0, len(fused))
	for name, s := range fused {
		hits = append(hits, Hit{Name: name, Description: byName[name].Description, Score: math.Round(s*1e5) / 1e5})
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
	return hits[:min(k, len(hits))]
}

// Docs are the indexed skills, in index order.
func (ix *Index) Docs() []Doc { return ix.docs }

func cosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
