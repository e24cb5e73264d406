package retrieval

import (
	"fmt"
	"strings"
	"testing"
)

func TestTerms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Filling PDF forms", "fill pdf form"},
		{"The running of the tests", "run test"},
		{"spreadsheets, CSV-files & XLSX", "spreadsheet csv file xlsx"},
		{"Écrire des résumés", "écrire des résumé"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := strings.Join(Terms(tc.in), " "); got != tc.want {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

var corpus = []Doc{
	{Name: "pdf-forms", Description: "Fill in and flatten PDF forms. Use when a PDF has fields to complete.", Headings: []string{"Filling fields", "Flattening"}},
	{Name: "xlsx", Description: "Read and write Excel spreadsheets, formulas and charts.", Headings: []string{"Formulas", "Charts"}},
	{Name: "release-notes", Description: "Write release notes from a changelog. Use before tagging a release.", Headings: []string{"Style", "Sections"}},
	{Name: "git-bisect", Description: "Find the commit that introduced a bug by bisecting history.", Headings: []string{"Running bisect"}},
	{Name: "csv-clean", Description: "Clean CSV files: fix encodings, quoting and delimiters.", Headings: []string{"Encodings"}},
}

func TestRankingOrder(t *testing.T) {
	ix := Build(corpus)
	tests := []struct {
		query string
		want  string // the top hit
	}{
		{"I need to complete the fields of a PDF document", "pdf-forms"},
		{"which commit broke the build? search the history", "git-bisect"},
		{"summarize the changelog for the new version before we tag it", "release-notes"},
		{"spreadsheet formulas", "xlsx"},
		{"the delimiter and quoting in a csv export are wrong", "csv-clean"},
	}
	for _, tc := range tests {
		hits := ix.Search(tc.query, 3)
		if len(hits) == 0 || hits[0].Name != tc.want {
			t.Errorf("Search(%q) = %+v, want %s first", tc.query, hits, tc.want)
		}
	}
	if hits := ix.Search("quantum chromodynamics", 5); len(hits) != 0 {
		t.Errorf("unrelated query matched %+v", hits)
	}
	if hits := ix.Search("pdf", 1); len(hits) != 1 {
		t.Errorf("k=1 gave %d hits", len(hits))
	}
	// A name word counts more than a heading word.
	ix2 := Build([]Doc{{Name: "charts", Description: "x"}, {Name: "other", Description: "y", Headings: []string{"charts"}}})
	if hits := ix2.Search("charts", 2); hits[0].Name != "charts" {
		t.Errorf("name did not outrank heading: %+v", hits)
	}
}

func BenchmarkBuild10000(b *testing.B) {
	docs := synthetic(10000)
	b.ResetTimer()
	for b.Loop() {
		Build(docs)
	}
}

func BenchmarkSearch10000(b *testing.B) {
	ix := Build(synthetic(10000))
	b.ResetTimer()
	for b.Loop() {
		ix.Search("fill the fields of a pdf form and flatten it", 8)
	}
}

// synthetic makes n skills from a vocabulary of a few thousand words, so
// postings lists have realistic lengths.
func synthetic(n int) []Doc {
	words := strings.Fields("pdf form spreadsheet chart commit bisect release note changelog csv encoding quote delimiter image resize crop video audio transcribe translate summarize email calendar invoice report dashboard metric alert deploy kubernetes docker terraform database migration schema query index cache queue retry webhook token oauth login password secret vault scan lint format test coverage benchmark profile trace log parse extract convert validate render template markdown html slide diagram graph map weather stock price news search crawl scrape api client server")
	docs := make([]Doc, n)
	for i := range docs {
		w := func(k int) string { return words[(i*7+k*13)%len(words)] }
		docs[i] = Doc{
			Name:        fmt.Sprintf("%s-%s-%d", w(1), w(2), i),
			Description: fmt.Sprintf("Helps to %s the %s %s and %s %s. Use when %s %s needs %s.", w(3), w(4), w(5), w(6), w(7), w(8), w(9), w(10)),
			Headings:    []string{w(11) + " " + w(12), w(13)},
		}
	}
	return docs
}

// The semantic stage can bring up a skill that shares no word with the
// query, and fusion keeps what both rankings agree on first.
func TestSearchFused(t *testing.T) {
	ix := Build(corpus)
	// Vectors: one dimension per skill, the query closest to csv-clean.
	vecs := make([][]float64, len(corpus))
	for i := range vecs {
		vecs[i] = make([]float64, len(corpus))
		vecs[i][i] = 1
	}
	q := make([]float64, len(corpus))
	q[4] = 1 // csv-clean
	hits := ix.SearchFused("tidy up a comma separated export", q, vecs, 3)
	if len(hits) == 0 || hits[0].Name != "csv-clean" {
		t.Errorf("fused = %+v, want csv-clean first (BM25 alone finds nothing)", hits)
	}
	if bm := ix.Search("tidy up a comma separated export", 3); len(bm) != 0 {
		t.Errorf("BM25 alone found %+v; the test wants a query only the vectors match", bm)
	}
	q2 := make([]float64, len(corpus))
	q2[0] = 1 // pdf-forms, which BM25 also ranks first
	if hits := ix.SearchFused("pdf form fields", q2, vecs, 2); hits[0].Name != "pdf-forms" {
		t.Errorf("agreeing rankings fused to %+v", hits)
	}
}
