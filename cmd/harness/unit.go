package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/resolve"
)

// unitSettings are the flags of `harness run` that pipeline run, batch run
// and batch k8s take for every phase or task, with the same help and
// HARNESS_* variable. Each is also a key of a file's defaults. The workspace
// and the endpoint have flags of their own (they are recorded apart), and
// what a unit may use (skills, tools, scripts, network, attachments,
// schema) comes from its own fields only.
var unitSettings = []string{
	"model", "fallback-model", "tier", "price", "skills-root", "external-skills-root", "embedding-model",
	"max-turns", "max-tokens", "timeout",
	"stream", "wire-api", "temperature", "top-p", "seed", "max-completion-tokens", "stop", "reasoning-effort", "extra-body",
	"request-timeout", "max-retries", "retry-max-wait", "schema-retries", "allow-empty-answer",
	"catalog-budget", "no-skill-catalog", "skip-eligibility", "profiles",
	"approve-created", "reload-created", "forge-root", "store",
	"sandbox", "script-memory-limit", "wasm-memory-limit", "mcp-config", "pass-env", "mcp-tool-effect", "protect", "allow-protected-write",
	"cfc-mode", "prompt-role", "fail-on-denial", "cfc-allow-unmediated", "honor-allowed-tools", "trust-skill",
}

// resumeSettings are the unit settings a pipeline or batch resume may
// change: how the model is reached and how long units may go on. The
// others are what the units are, recorded when they started.
var resumeSettings = []string{"fallback-model", "stream", "request-timeout", "max-retries", "retry-max-wait", "timeout", "max-tokens"}

func runOption(name string) option {
	i := slices.IndexFunc(runOptions, func(o option) bool { return o.name == name })
	return runOptions[i]
}

// unitFlags are the flags of names, as `harness run` has them, for the
// runs of every unit ("phase", "task"; "" for a scheduled run, which is a
// harness run): where a run's help speaks of a flag a unit takes as a
// field of its own, the unit's help (unitUsage) speaks of that field.
func unitFlags(names []string, unit string) []cli.Flag {
	category := "Run settings of every scheduled run"
	if unit != "" {
		category = fmt.Sprintf("Run settings of every %s (its own field > flag > HARNESS_* > the file's defaults > built-in)", unit)
	}
	out := make([]cli.Flag, 0, len(names))
	for _, n := range names {
		o := runOption(n)
		switch {
		case o.unitUsage != "" && unit != "":
			o.usage = strings.ReplaceAll(o.unitUsage, "UNIT", unit)
		case o.scheduleUsage != "" && unit == "":
			o.usage = o.scheduleUsage
		}
		out = append(out, withCategory(o.cliFlag(), category))
	}
	return out
}

func withCategory(f cli.Flag, category string) cli.Flag {
	switch x := f.(type) {
	case *cli.StringFlag:
		x.Category = category
	case *cli.StringSliceFlag:
		x.Category = category
	case *cli.IntFlag:
		x.Category = category
	case *cli.DurationFlag:
		x.Category = category
	case *cli.BoolFlag:
		x.Category = category
	}
	return f
}

// frozenUnitFlags are the unit settings a resume refuses, hidden from its
// help: given anyway, they get a sentence instead of "flag provided but
// not defined".
func frozenUnitFlags() []cli.Flag {
	var out []cli.Flag
	for _, n := range unitSettings {
		if !slices.Contains(resumeSettings, n) && n != "max-turns" {
			out = append(out, &cli.StringSliceFlag{Name: n, Hidden: true})
		}
	}
	return out
}

func refuseFrozen(cmd *cli.Command, kind string) error {
	for _, n := range unitSettings {
		if !slices.Contains(resumeSettings, n) && n != "max-turns" && cmd.IsSet(n) {
			return usagef(fmt.Sprintf("--%s cannot change on resume: the %s continues with the settings its units started with (recorded in its directory); start a new %s to change it", n, kind, kind))
		}
	}
	return nil
}

// unitLayer reads names from their flags and HARNESS_* variables (flag
// first), as the settings a pipeline file's defaults would hold.
func unitLayer(cmd *cli.Command, names []string) (pipeline.Layer, error) {
	l := pipeline.Layer{Sources: map[string]string{}}
	values := map[string]any{}
	for _, name := range names {
		v, src, ok, err := fromCommandLine(cmd, runOption(name))
		if err != nil {
			return l, err
		}
		if !ok {
			continue
		}
		if v, err = settingValue(name, v); err != nil {
			return l, err
		}
		values[name], l.Sources[name] = v, src
	}
	b, err := json.Marshal(values)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&l.Settings)
	}
	if err != nil {
		return l, usagef(fmt.Sprintf("the run settings given cannot be read: %v", err))
	}
	return l, nil
}

// settingValue turns a flag's value into what the setting holds in a
// file: durations as text, numbers as numbers, paths absolute (a file's
// are relative to the file, the command line's to where harness started).
func settingValue(name string, v any) (any, error) {
	switch x := v.(type) {
	case time.Duration:
		return x.String(), nil
	case []string:
		if name == "skills-root" || name == "external-skills-root" {
			out := make([]string, len(x))
			for i, p := range x {
				out[i] = p
				if p != resolve.AutoRoot {
					out[i], _ = filepath.Abs(p)
				}
			}
			return out, nil
		}
	case string:
		switch name {
		case "temperature", "top-p":
			return parseFloat("--"+name, x)
		case "seed":
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return nil, usagef(fmt.Sprintf("--seed %q: give an integer", x))
			}
			return n, nil
		case "extra-body":
			var m map[string]any
			if err := json.Unmarshal([]byte(x), &m); err != nil || m == nil {
				return nil, usagef(fmt.Sprintf("--extra-body %q: give a JSON object, such as '{\"top_k\": 20}'", x))
			}
			return m, nil
		case "mcp-config", "profiles", "forge-root", "store":
			return filepath.Abs(x)
		}
	}
	return v, nil
}

// resumeFlags are a pipeline or batch resume's own: decisions on waiting
// calls, the settings it may change, and its output.
func resumeFlags(unit string) []cli.Flag {
	out := approvalFlags(unit)
	out = append(out, unitFlags(resumeSettings, unit)...)
	out = append(out, frozenUnitFlags()...)
	return append(out, pipelineOutputFlags(unit)...)
}

// resumeLayer is what a resume changes of its units' settings; a setting
// it may not change is refused, named.
func resumeLayer(cmd *cli.Command, kind string) (pipeline.Layer, error) {
	if err := refuseFrozen(cmd, kind); err != nil {
		return pipeline.Layer{}, err
	}
	return unitLayer(cmd, resumeSettings)
}

// unitArgs are the unit settings given to `harness batch k8s`, as flags of
// every pod's `harness batch run`: spelled as given (paths are the
// image's), whether they came from a flag or a HARNESS_* variable, since
// the pods do not share the operator's environment.
func unitArgs(cmd *cli.Command) ([]string, error) {
	return unitArgsOf(cmd, unitSettings)
}

// unitArgsOf is unitArgs for the settings names.
func unitArgsOf(cmd *cli.Command, names []string) ([]string, error) {
	var out []string
	for _, name := range names {
		v, _, ok, err := fromCommandLine(cmd, runOption(name))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if _, err := settingValue(name, v); err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case []string:
			for _, s := range x {
				out = append(out, "--"+name+"="+s)
			}
		default:
			out = append(out, fmt.Sprintf("--%s=%v", name, x))
		}
	}
	return out, nil
}
