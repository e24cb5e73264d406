package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/skills"
)

func skillsIndexCommand() *cli.Command {
	return &cli.Command{
		Name:  "index",
		Usage: "write the skill index of a root, for a team to host and others to discover",
		UsageText: "harness skills index ROOT [--source URL] [--path DIR] [--ref REF] [-o FILE]\n\n" +
			"Each skill of ROOT becomes an entry {name, description, source, ref, digest}. With --source,\n" +
			"the git repository ROOT is published in (--path: ROOT's directory in it), an entry's source\n" +
			"is URL#DIR/<skill>, which harness skills add takes; without it, the skill's directory. The format's\n" +
			"JSON Schema is discovery/index.schema.json; list the file's URL under skills.sources.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "source", Usage: "the git repository `URL` the root is published in"},
			&cli.StringFlag{Name: "path", Usage: "the root's `DIR` inside that repository"},
			&cli.StringFlag{Name: "ref", Usage: "the tag, branch or commit (`REF`) entries name"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the index to `FILE`", DefaultText: "stdout"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills index takes exactly one ROOT")
			}
			if err := checkIndexRef(ctx, cmd.Args().First(), cmd.String("source"), cmd.String("ref")); err != nil {
				return err
			}
			reg, err := scanPlain(ctx, cmd.Args().First())
			if err != nil {
				return err
			}
			ix := discovery.Of(reg, cmd.String("source"), cmd.String("path"), cmd.String("ref"))
			if out := cmd.String("output"); out != "" {
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					return err
				}
				if err := artifacts.WriteJSON(out, ix); err != nil {
					return err
				}
				fmt.Fprintf(cmd.Root().ErrWriter, "wrote %d skills to %s\n", len(ix.Skills), out)
				return nil
			}
			return writeJSONTo(cmd.Root().Writer, ix)
		},
	}
}

// checkIndexRef refuses a --ref that names nothing: every entry of the
// index would point at it, and every install from it would fail. It is
// looked up in the repository that holds root, else (a root outside any
// repository) on the --source remote.
func checkIndexRef(ctx context.Context, root, source, ref string) error {
	if ref == "" {
		return nil
	}
	commit, err := gitsource.LocalRef(root, ref)
	switch {
	case err == nil && commit != "":
		return nil
	case err == nil:
		return usagef(fmt.Sprintf("--ref %s: the git repository of %s has no tag, branch or commit %s", ref, root, ref))
	case !errors.Is(err, gitsource.ErrNoRepository):
		return usagef(fmt.Sprintf("--ref %s: %v", ref, err))
	case source == "":
		return usagef(fmt.Sprintf("--ref %s: %s is in no git repository and no --source is given, so nothing says %s exists", ref, root, ref))
	}
	commit, err = gitsource.RemoteRef(ctx, source, ref)
	if err != nil {
		return usagef(fmt.Sprintf("--ref %s: cannot check it on --source: %v", ref, err))
	}
	if commit == "" {
		return usagef(fmt.Sprintf("--ref %s: %s has no tag, branch or commit %s", ref, source, ref))
	}
	return nil
}

// skillsDiscovery is the --json output of harness skills discover.
type skillsDiscovery struct {
	artifacts.Envelope
	Query      string                  `json:"query"`
	Skills     []discovery.Candidate   `json:"skills"`
	MCPServers []discovery.MCPServer   `json:"mcpServers,omitempty"`
	Warnings   []string                `json:"warnings,omitempty"`
	Sources    []discoverySourceStatus `json:"sources"`
}

type discoverySourceStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // fetched | cached | stale | failed
	Error  string `json:"error,omitempty"`
}

func skillsDiscoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "discover",
		Usage: "find skills for a need in your roots and in the indexes you configured (and MCP servers in a registry)",
		UsageText: "harness skills discover QUERY... [--skills-root DIR]... [--source NAME|local|all] [--mcp] [--json]\n\n" +
			"Indexes are listed in the --config file:\n\n" +
			"    skills:\n      sources:\n        - {name: team, url: https://skills.example.com/index.json}\n\n" +
			"Each is fetched with a timeout and kept in the user cache by URL with its ETag; it is read\n" +
			"as data (its JSON Schema is discovery/index.schema.json), never run. Local skills and index\n" +
			"entries are ranked together by the BM25 harness skills search uses; each result says where\n" +
			"it comes from and whether it is installed. harness skills add SOURCE installs one.",
		Flags: append(scanFlags(),
			&cli.StringFlag{Name: "source", Usage: "search only index `NAME`, local (your roots), or all", Value: "all"},
			&cli.IntFlag{Name: "k", Usage: "how many results (`N`)", Value: 8},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON"},
			&cli.BoolFlag{Name: "mcp", Usage: "also search the MCP registry for servers"},
			&cli.StringFlag{Name: "mcp-registry", Usage: "MCP registry base `URL`", Value: discovery.DefaultMCPRegistry, Sources: cli.EnvVars("HARNESS_MCP_REGISTRY")},
			configFlag("skills.sources"),
			&cli.StringFlag{Name: "index-cache", Usage: "`DIR` keeping fetched indexes by URL", DefaultText: "the user cache directory", Sources: cli.EnvVars("HARNESS_INDEX_CACHE")},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			query := strings.TrimSpace(strings.Join(cmd.Args().Slice(), " "))
			if query == "" {
				return usagef("harness skills discover needs a QUERY: what the task needs, in a few words")
			}
			if cmd.Int("k") < 1 {
				return usagef("-k must be at least 1")
			}
			cf, err := findConfig(cmd)
			if err != nil {
				return err
			}
			sources, err := cf.skillSources()
			if err != nil {
				return err
			}
			which := cmd.String("source")
			if which != "all" && which != discovery.FromLocal && !hasSource(sources, which) {
				return usagef(fmt.Sprintf("--source %s: not local, all, or a source in skills.sources (%s)", which, sourceNames(sources)))
			}
			out := skillsDiscovery{Envelope: artifacts.NewEnvelope("harness.skill-discovery", 1), Query: query, Skills: []discovery.Candidate{}, Sources: []discoverySourceStatus{}}
			var cands []discovery.Candidate
			installed := map[string]artifacts.Digest{}
			if len(cmd.StringSlice("skills-root")) > 0 {
				reg, err := scanRoots(ctx, cmd)
				if err != nil {
					return err
				}
				local := discovery.Local(reg)
				for _, c := range local {
					installed[c.Name] = c.Digest
				}
				if which == "all" || which == discovery.FromLocal {
					cands = append(cands, local...)
				}
			}
			f := &discovery.Fetcher{CacheDir: indexCache(cmd.String("index-cache"))}
			for _, src := range sources {
				if which != "all" && which != src.Name {
					continue
				}
				ix, got, err := f.Fetch(ctx, src)
				st := discoverySourceStatus{Name: src.Name, Status: "fetched"}
				switch {
				case err != nil:
					st.Status, st.Error = "failed", err.Error()
					out.Warnings = append(out.Warnings, err.Error())
				case got.Stale:
					st.Status = "stale"
					out.Warnings = append(out.Warnings, fmt.Sprintf("source %s cannot be reached: using the copy cached earlier", src.Name))
				case got.Cached:
					st.Status = "cached"
				}
				out.Sources = append(out.Sources, st)
				if err == nil {
					cands = append(cands, discovery.FromIndex(src.Name, ix, installed)...)
				}
			}
			if r := discovery.Rank(query, cands, int(cmd.Int("k"))); r != nil {
				out.Skills = r
			}
			if cmd.Bool("mcp") {
				servers, err := discovery.SearchMCP(ctx, nil, cmd.String("mcp-registry"), query, int(cmd.Int("k")))
				if err != nil {
					out.Warnings = append(out.Warnings, err.Error())
				}
				out.MCPServers = servers
				if out.MCPServers == nil {
					out.MCPServers = []discovery.MCPServer{}
				}
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, out)
			}
			// Every name, description, source and install line is an
			// index's or a registry's words: escaped before a terminal
			// sees them.
			e := termsafe.Escape
			for _, warn := range out.Warnings {
				fmt.Fprintf(cmd.Root().ErrWriter, "harness: %s\n", e(warn))
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCORE\tNAME\tFROM\tINSTALLED\tSOURCE\tDESCRIPTION")
			for _, c := range out.Skills {
				src := c.Source
				if c.Ref != "" {
					src += "@" + c.Ref
				}
				fmt.Fprintf(tw, "%.3f\t%s\t%s\t%s\t%s\t%s\n", c.Score, e(c.Name), e(c.From), orDash(e(c.Installed)), e(src), shorten(e(c.Description), 60))
			}
			tw.Flush()
			if cmd.Bool("mcp") {
				fmt.Fprintf(w, "\nMCP servers (%s):\n", cmd.String("mcp-registry"))
				for _, s := range out.MCPServers {
					fmt.Fprintf(w, "  %s %s: %s\n", e(s.Name), e(s.Version), shorten(e(s.Description), 70))
					for _, h := range s.Install {
						fmt.Fprintf(w, "    %s\n", e(h))
					}
					if len(s.Install) == 0 {
						fmt.Fprintf(w, "    (no command to run it: the registry names no package of a kind harness knows as a plain name)\n")
					}
				}
			}
			return nil
		},
	}
}

func hasSource(sources []discovery.Source, name string) bool {
	for _, s := range sources {
		if s.Name == name {
			return true
		}
	}
	return false
}

func sourceNames(sources []discovery.Source) string {
	var names []string
	for _, s := range sources {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "none configured"
	}
	return strings.Join(names, ", ")
}

func indexCache(flag string) string {
	if flag != "" {
		return flag
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "harness", "skill-indexes")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// scanPlain scans one root on its own (no workspace around it).
func scanPlain(ctx context.Context, root string) (*skills.Registry, error) {
	abs, err := realDir(root, "ROOT")
	if err != nil {
		return nil, err
	}
	return skills.Scan(ctx, skills.ScanOptions{Roots: []string{abs}})
}

// discoverySettings are a run's skill indexes (NAME=URL) and trusted
// sources: --skill-source and --trusted-source, then skills.sources and
// skills.trustedSources of the config file, the ones `harness skills`
// reads.
func discoverySettings(ro *resolvedOptions) (sources, trusted []string, err error) {
	sources, trusted = ro.strs("skill-source"), ro.strs("trusted-source")
	cfgSources, err := ro.configFile.skillSources()
	if err != nil {
		return nil, nil, err
	}
	for _, s := range cfgSources {
		sources = append(sources, s.Name+"="+s.URL)
	}
	cfgTrusted, err := ro.configFile.trustedSources()
	if err != nil {
		return nil, nil, err
	}
	return sources, append(trusted, cfgTrusted...), nil
}
