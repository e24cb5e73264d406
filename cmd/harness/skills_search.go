package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/retrieval"
)

// skillSearch is the --json output of `harness skills search`.
type skillSearch struct {
	artifacts.Envelope
	Query   string          `json:"query"`
	Of      int             `json:"of"`
	Results []retrieval.Hit `json:"results"`
}

func skillsSearchCommand() *cli.Command {
	return &cli.Command{
		Name:      "search",
		Usage:     "rank the skills for a need, as find_skills does for the model (BM25 over name, description, headings)",
		UsageText: "harness skills search QUERY... --skills-root DIR [-k N] [--json]",
		Flags: append(scanFlags(),
			&cli.IntFlag{Name: "k", Usage: "how many results (`N`)", Value: 8},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			query := strings.TrimSpace(strings.Join(cmd.Args().Slice(), " "))
			if query == "" {
				return usagef("harness skills search needs a QUERY: what the task needs, in a few words")
			}
			if cmd.Int("k") < 1 {
				return usagef("-k must be at least 1")
			}
			reg, err := scanRoots(ctx, cmd)
			if err != nil {
				return err
			}
			ix := retrieval.FromRegistry(reg)
			out := skillSearch{Envelope: artifacts.NewEnvelope("harness.skill-search", 1), Query: query, Of: ix.Len(), Results: ix.Search(query, int(cmd.Int("k")))}
			if out.Results == nil {
				out.Results = []retrieval.Hit{}
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, out)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCORE\tNAME\tDESCRIPTION")
			for _, h := range out.Results {
				fmt.Fprintf(tw, "%.3f\t%s\t%s\n", h.Score, h.Name, shorten(h.Description, 80))
			}
			tw.Flush()
			fmt.Fprintf(cmd.Root().ErrWriter, "%d of %d skills match\n", len(out.Results), out.Of)
			return nil
		},
	}
}
