package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/store"
	"github.com/harness-dev/harness/yamlsafe"
	"github.com/urfave/cli/v3"
)

func skillsInstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "install a skill from a local directory or archive, refusing anything unsafe",
		UsageText: "harness skills install SOURCE --to ROOT [--force] [--allow-risky] [--config FILE]\n\n" +
			"SOURCE is a skill directory or a .tar.gz/.tgz/.zip archive of one, under a trusted source\n" +
			"listed in the config file:\n\n" +
			"    skills:\n      trustedSources: [/srv/skills, ./vendor/skills]\n\n" +
			"The skill is unpacked into a staging directory in ROOT, validated (the rules of harness skills validate --strict), scanned\n" +
			"(a critical finding refuses, exit 5, unless --allow-risky), kept in the skill store as a\n" +
			"version named by its digest (see harness skills versions, rollback), swapped into place\n" +
			"atomically and recorded in ROOT/skills.lock.json and the store's audit log. Programs a\n" +
			"skill needs are never installed: the hints are printed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "skills root `DIR` to install into", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
			&cli.BoolFlag{Name: "force", Usage: "replace an installed skill of the same name"},
			&cli.BoolFlag{Name: "allow-risky", Usage: "install despite critical content findings"},
			&cli.StringFlag{Name: "config", Usage: "YAML `FILE` with skills.trustedSources", Sources: cli.EnvVars("HARNESS_CONFIG")},
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills install takes exactly one SOURCE (a directory or archive)")
			}
			if cmd.String("to") == "" {
				return usagef("harness skills install needs --to ROOT, the skills root to install into")
			}
			trustedSources, err := readTrustedSources(cmd.String("config"))
			if err != nil {
				return err
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			in, err := store.Install(ctx, store.InstallOptions{
				Source: cmd.Args().First(), Root: cmd.String("to"), TrustedSources: trustedSources,
				Force: cmd.Bool("force"), AllowRisky: cmd.Bool("allow-risky"), Store: st,
			})
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			fmt.Fprintf(w, "installed %s at %s (%s)\n", in.Name, in.Dir, in.Digest)
			switch {
			case in.Parent != "" && in.Parent != in.Version:
				fmt.Fprintf(w, "  version %s, replacing %s (harness skills rollback %s goes back)\n", shortDigest(in.Version), shortDigest(in.Parent), in.Name)
			case in.Version != "":
				fmt.Fprintf(w, "  version %s\n", shortDigest(in.Version))
			}
			for _, f := range in.Findings {
				fmt.Fprintf(w, "  finding: %s %s (%s:%d): %s\n", f.Severity, f.Rule, f.Path, f.Line, f.Match)
			}
			for _, h := range in.InstallHints {
				fmt.Fprintf(w, "  needs: %s\n", h)
			}
			return nil
		},
	}
}

// readTrustedSources reads skills.trustedSources from the config file:
// directories (relative ones are relative to the file) and URL prefixes.
func readTrustedSources(file string) ([]string, error) {
	cfg, err := readSkillsConfig(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range cfg.Skills.TrustedSources {
		// A prefix gitsource would refuse as a source trusts nothing:
		// say so rather than leave the operator wondering.
		if strings.Contains(p, "://") {
			if err := gitsource.CheckURL(p); err != nil {
				return nil, usagef(fmt.Sprintf("--config %s: skills.trustedSources %s is refused: %v", file, p, err))
			}
		}
		if !filepath.IsAbs(p) && !strings.Contains(p, "://") {
			p = filepath.Join(filepath.Dir(file), p)
		}
		out = append(out, p)
	}
	return out, nil
}

// skillsConfig is the skills: section of the config file, the settings of
// harness skills (and of a run's discovery tools).
type skillsConfig struct {
	Skills struct {
		TrustedSources []string           `yaml:"trustedSources"`
		Sources        []discovery.Source `yaml:"sources"`
	} `yaml:"skills"`
}

// readSkillsConfig reads the skills: section of the config file ("" reads
// nothing).
func readSkillsConfig(file string) (skillsConfig, error) {
	var cfg skillsConfig
	if file == "" {
		return cfg, nil
	}
	data, err := readFlagFile("config", file, maxOperatorFile)
	if err != nil {
		return cfg, err
	}
	if err := yamlsafe.Unmarshal(file, data, &cfg); err != nil {
		return cfg, usagef(fmt.Sprintf("--config %s: invalid YAML: %v", file, err))
	}
	return cfg, nil
}
