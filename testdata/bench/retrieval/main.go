// Command retrieval measures find_skills' ranking (BM25 alone) on public
// skill collections: recall@1, recall@5 and MRR over a hand-written query
// set, and index build and query times at 1,300 and 10,000 skills.
//
//	go run ./testdata/bench/retrieval -queries testdata/bench/retrieval/queries.jsonl ROOT...
//
// ROOTs are skill roots (testdata/bench/corpus.sh checks out the public
// collections into .corpus/). The 1,300-skill set is every skill a query
// expects plus others taken in a fixed order (by the digest of the name);
// the 10,000-skill set is every real skill plus synthesized ones, each a
// real skill's text under a new name, so that it holds realistic
// near-duplicates.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/retrieval"
	"github.com/harness-dev/harness/skills"
)

type query struct {
	Query string `json:"query"`
	Skill string `json:"skill"`
}

func main() {
	qfile := flag.String("queries", "testdata/bench/retrieval/queries.jsonl", "query set (JSONL: query, skill)")
	list := flag.Bool("list", false, "print the 1,300-skill set's names and descriptions (to write queries) and stop")
	flag.Parse()
	reg, err := skills.Scan(context.Background(), skills.ScanOptions{Roots: flag.Args(), Limits: skills.Limits{DiscoveryDirs: 1 << 20}})
	if err != nil {
		fail(err)
	}
	all := map[string]retrieval.Doc{}
	for _, s := range reg.Skills {
		if s.ShadowedBy == "" && s.ModelInvocable() {
			all[s.Name] = retrieval.Doc{Name: s.Name, Description: s.Description, Headings: s.Headings}
		}
	}
	qs := readQueries(*qfile)
	// A query whose skill the roots do not hold (a checkout without it, a
	// skill discovery leaves out) is dropped, and said so: recall is over
	// the queries that remain.
	kept := qs[:0]
	for _, q := range qs {
		if _, ok := all[q.Skill]; !ok {
			fmt.Fprintf(os.Stderr, "retrieval: dropped query %q: the roots hold no %s\n", q.Query, q.Skill)
			continue
		}
		kept = append(kept, q)
	}
	qs = kept
	small := subset(all, qs, 1300)
	if *list {
		for _, d := range small {
			fmt.Printf("%s :: %s\n", d.Name, strings.Join(strings.Fields(d.Description), " "))
		}
		return
	}

	fmt.Printf("corpus: %d skills from %s; %d queries\n\n", len(all), strings.Join(flag.Args(), ", "), len(qs))
	fmt.Println("| skills | recall@1 | recall@5 | MRR | index build | query (mean) |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, docs := range [][]retrieval.Doc{small, large(all, 10000)} {
		report(docs, qs)
	}
}

func report(docs []retrieval.Doc, qs []query) {
	build := best(5, func() { retrieval.Build(docs) })
	ix := retrieval.Build(docs)
	var r1, r5, mrr float64
	var misses []string
	start := time.Now()
	for _, q := range qs {
		hits := ix.Search(q.Query, 10)
		rank := slices.IndexFunc(hits, func(h retrieval.Hit) bool { return h.Name == q.Skill })
		switch {
		case rank == 0:
			r1++
			fallthrough
		case rank >= 0 && rank < 5:
			r5++
		}
		if rank >= 0 {
			mrr += 1 / float64(rank+1)
		}
		if rank < 0 || rank >= 5 {
			got := ""
			if len(hits) > 0 {
				got = hits[0].Name
			}
			misses = append(misses, fmt.Sprintf("%s (rank %d, top: %s)", q.Skill, rank+1, got))
		}
	}
	per := time.Since(start) / time.Duration(len(qs))
	n := float64(len(qs))
	fmt.Printf("| %d | %.2f | %.2f | %.2f | %.0f ms | %.2f ms |\n", len(docs), r1/n, r5/n, mrr/n, float64(build.Microseconds())/1000, float64(per.Microseconds())/1000)
	for _, m := range misses {
		fmt.Fprintf(os.Stderr, "  %d skills: not in the top 5: %s\n", len(docs), m)
	}
}

func best(n int, f func()) time.Duration {
	var b time.Duration
	for i := 0; i < n; i++ {
		s := time.Now()
		f()
		if d := time.Since(s); i == 0 || d < b {
			b = d
		}
	}
	return b
}

// subset is the expected skills plus others in a fixed order, n in all.
func subset(all map[string]retrieval.Doc, qs []query, n int) []retrieval.Doc {
	want := map[string]bool{}
	var out []retrieval.Doc
	for _, q := range qs {
		if d, ok := all[q.Skill]; ok && !want[q.Skill] {
			want[q.Skill] = true
			out = append(out, d)
		}
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return artifacts.DigestString(names[i]) < artifacts.DigestString(names[j]) })
	for _, name := range names {
		if len(out) >= n {
			break
		}
		if !want[name] {
			out = append(out, all[name])
		}
	}
	return out
}

// large is every real skill, then copies of real skills under new names
// until there are n.
func large(all map[string]retrieval.Doc, n int) []retrieval.Doc {
	var out []retrieval.Doc
	var names []string
	for name, d := range all {
		out = append(out, d)
		names = append(names, name)
	}
	sort.Strings(names)
	for i := 0; len(out) < n; i++ {
		d := all[names[i%len(names)]]
		d.Name = fmt.Sprintf("%s-copy-%d", d.Name, i)
		out = append(out, d)
	}
	return out
}

func readQueries(path string) []query {
	f, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	var qs []query
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var q query
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			fail(fmt.Errorf("%s: %v", path, err))
		}
		qs = append(qs, q)
	}
	return qs
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "retrieval:", err)
	os.Exit(1)
}
