package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/skills"
)

// scriptTemplates are the starter scripts `skills init --with-script`
// writes: each prints where it runs, so a first run_skill_script call
// shows the skill works in the sandbox.
var scriptTemplates = map[string]struct{ file, body string }{
	"bash":   {"scripts/hello.sh", "#!/usr/bin/env bash\nset -euo pipefail\necho \"hello from $SKILL_NAME in $(pwd)\"\n"},
	"python": {"scripts/hello.py", "#!/usr/bin/env python3\nimport os\n\nprint(f\"hello from {os.environ.get('SKILL_NAME')} in {os.getcwd()}\")\n"},
	"deno":   {"scripts/hello.ts", "#!/usr/bin/env -S deno run --allow-env\nconsole.log(`hello from ${Deno.env.get(\"SKILL_NAME\")} in ${Deno.cwd()}`);\n"},
}

func skillsInitCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "scaffold a new skill that passes harness skills validate --strict",
		UsageText: "harness skills init NAME [--root DIR] [--with-script bash|python|deno]",
		Description: "Writes ROOT/NAME/SKILL.md (frontmatter with name and a description to finish, then a body\n" +
			"that says when and how to use the skill) and, with --with-script, a starter script under\n" +
			"scripts/ that run_skill_script can run in the sandbox. An existing directory is never touched.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Usage: "skills root `DIR` to create the skill in", Value: "skills"},
			&cli.StringFlag{Name: "with-script", Usage: "add a starter script in `LANG`: bash, python or deno"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills init takes exactly one NAME (lowercase letters, digits and single hyphens)")
			}
			name := cmd.Args().First()
			if !skills.ValidName(name) {
				return usagef(fmt.Sprintf("skill name %q: use 1-64 lowercase letters, digits and single hyphens, not starting or ending with a hyphen", name))
			}
			lang := cmd.String("with-script")
			tmpl, ok := scriptTemplates[lang]
			if lang != "" && !ok {
				return usagef(fmt.Sprintf("--with-script %q: use bash, python or deno", lang))
			}
			dir := filepath.Join(cmd.String("root"), name)
			if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
				return usagef(fmt.Sprintf("%s already exists: choose another name or remove it first", dir))
			}
			body := fmt.Sprintf("---\nname: %s\ndescription: Describe what %s does and when to use it, in one or two sentences.\n---\n# %s\n\n"+
				"Say here what the skill is for, the steps to follow, and what a good result looks like.\n", name, name, name)
			files := map[string]string{"SKILL.md": body}
			if ok {
				files["SKILL.md"] += fmt.Sprintf("\nRun `%s` with run_skill_script to check the skill works in the sandbox.\n", tmpl.file)
				files[tmpl.file] = tmpl.body
			}
			for rel, content := range files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				mode := os.FileMode(0o644)
				if filepath.Dir(rel) == "scripts" {
					mode = 0o755
				}
				if err := os.WriteFile(p, []byte(content), mode); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.Root().Writer, "created %s\n", dir)
			if ok {
				fmt.Fprintf(cmd.Root().Writer, "allow its script with --allow-tool run_skill_script --allow-skill-script %s:%s\n", name, tmpl.file)
			}
			return nil
		},
	}
}
