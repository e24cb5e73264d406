package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
)

func skillsSnapshotCommand() *cli.Command {
	return &cli.Command{
		Name:      "snapshot",
		Usage:     "write the registry snapshot (skill-registry.json) a run would take",
		UsageText: "harness skills snapshot --skills-root DIR [--skills-root DIR]... --out FILE",
		Flags: append(scanFlags(), &cli.StringFlag{Name: "out", Usage: "write the snapshot to `FILE` (- for standard output)"},
			&cli.StringFlag{Name: "snapshot-cache", Usage: "reuse digests of files unchanged (by stat fingerprint) since the last snapshot cached in `DIR`, and update it; the snapshot is the same as without"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef(fmt.Sprintf("unexpected argument %q: give roots with --skills-root", cmd.Args().First()))
			}
			out := cmd.String("out")
			if out == "" {
				return usagef("harness skills snapshot needs --out FILE (- for standard output)")
			}
			reg, err := scanRoots(ctx, cmd)
			if err != nil {
				return err
			}
			if out == "-" {
				return writeJSONTo(cmd.Root().Writer, reg)
			}
			if err := artifacts.WriteJSON(out, reg); err != nil {
				return fmt.Errorf("write snapshot: %w", err)
			}
			fmt.Fprintf(cmd.Root().ErrWriter, "wrote %s: %d skills, %d diagnostics, digest %s\n", out, len(reg.Skills), countDiagnostics(reg), reg.Digest)
			return nil
		},
	}
}
