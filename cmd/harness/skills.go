package main

import "github.com/urfave/cli/v3"

func skillsCommand() *cli.Command {
	return &cli.Command{Name: "skills", Usage: "inspect and validate skill roots"}
}
