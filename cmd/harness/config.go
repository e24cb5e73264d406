package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
)

// option describes one setting of `harness run` that can come from a flag,
// a HARNESS_* environment variable, or the --config file, in that order of
// precedence. Keeping the table in one place makes the env and config names
// follow the flag names mechanically.
type option struct {
	name  string
	kind  optionKind
	usage string
	def   any
	// defText is the default help shows where def is not it: a zero
	// that means "none", or a default decided later (5m, the user cache
	// directory).
	defText string
	// unitUsage is the help of the option as a setting of every phase or
	// task (UNIT stands for which), where usage names what a unit gives
	// in a field of its own (--skill, --output-schema, --allow-tool).
	unitUsage string
	// scheduleUsage is its help as a setting of every scheduled run,
	// where usage names a flag a scheduled run has no use for (its skill
	// is the one scheduled).
	scheduleUsage string
	// envFallbacks are read after HARNESS_<NAME>, e.g. OPENAI_BASE_URL.
	envFallbacks []string
}

type optionKind int

const (
	kindString optionKind = iota
	kindStrings
	kindInt
	kindDuration
	kindBool
)

func envName(flag string) string {
	return "HARNESS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// cliFlag turns an option into a urfave/cli flag. Env vars are not attached
// as cli Sources: precedence and the recorded source are decided by
// resolveOptions, and the help text names the variable instead.
func (o option) cliFlag() cli.Flag {
	usage := o.usage
	if o.kind == kindStrings {
		usage += " (repeatable)"
	}
	usage += " [$" + envName(o.name)
	for _, e := range o.envFallbacks {
		usage += ", $" + e
	}
	usage += "]"
	cat := runCategory(o.name)
	switch o.kind {
	case kindStrings:
		return &cli.StringSliceFlag{Name: o.name, Usage: usage, Category: cat, DefaultText: o.defText}
	case kindInt:
		return &cli.IntFlag{Name: o.name, Usage: usage, Value: o.def.(int), Category: cat, DefaultText: o.defText}
	case kindDuration:
		return &cli.DurationFlag{Name: o.name, Usage: usage, Category: cat, DefaultText: o.defText}
	case kindBool:
		return &cli.BoolFlag{Name: o.name, Usage: usage, Category: cat}
	default:
		s, _ := o.def.(string)
		return &cli.StringFlag{Name: o.name, Usage: usage, Value: s, Category: cat, DefaultText: o.defText}
	}
}

// resolved holds effective values and where each came from.
type resolvedOptions struct {
	values  map[string]any
	sources map[string]string
	config  string
	// configFile is the config file read (its path is config).
	configFile *configFile
}

func (r *resolvedOptions) str(name string) string    { s, _ := r.values[name].(string); return s }
func (r *resolvedOptions) strs(name string) []string { s, _ := r.values[name].([]string); return s }
func (r *resolvedOptions) int(name string) int       { n, _ := r.values[name].(int); return n }
func (r *resolvedOptions) dur(name string) time.Duration {
	d, _ := r.values[name].(time.Duration)
	return d
}
func (r *resolvedOptions) boolean(name string) bool { b, _ := r.values[name].(bool); return b }

// resolveOptions applies flag > env > config > default to every option.
func resolveOptions(cmd *cli.Command, opts []option) (*resolvedOptions, error) {
	out := &resolvedOptions{values: map[string]any{}, sources: map[string]string{}}
	cf, err := findConfig(cmd)
	if err != nil {
		return nil, err
	}
	cfg, err := cf.runSettings()
	if err != nil {
		return nil, err
	}
	out.config, out.configFile = cf.path, cf
	for _, o := range opts {
		v, src, err := resolveOne(cmd, o, cfg)
		if err != nil {
			return nil, err
		}
		out.values[o.name], out.sources[o.name] = v, src
	}
	return out, nil
}

func resolveOne(cmd *cli.Command, o option, cfg map[string]any) (any, string, error) {
	if v, src, ok, err := fromCommandLine(cmd, o); ok || err != nil {
		return v, src, err
	}
	if raw, ok := cfg[o.name]; ok {
		v, err := configValue(o.kind, raw)
		if err != nil {
			return nil, "", usagef(fmt.Sprintf("config key %s: %v", o.name, err))
		}
		return v, "config", nil
	}
	switch o.kind {
	case kindStrings:
		return []string(nil), "default", nil
	case kindDuration:
		return time.Duration(0), "default", nil
	case kindBool:
		return false, "default", nil
	}
	return o.def, "default", nil
}

// fromCommandLine is an option's value from its flag, else from its
// environment variable; ok is false when neither gives one.
func fromCommandLine(cmd *cli.Command, o option) (v any, source string, ok bool, err error) {
	if cmd.IsSet(o.name) {
		switch o.kind {
		case kindStrings:
			return cmd.StringSlice(o.name), "flag", true, nil
		case kindInt:
			return cmd.Int(o.name), "flag", true, nil
		case kindDuration:
			return cmd.Duration(o.name), "flag", true, nil
		case kindBool:
			return cmd.Bool(o.name), "flag", true, nil
		default:
			return cmd.String(o.name), "flag", true, nil
		}
	}
	for _, env := range append([]string{envName(o.name)}, o.envFallbacks...) {
		if raw, set := os.LookupEnv(env); set && raw != "" {
			v, err := parseValue(o.kind, raw)
			if err != nil {
				return nil, "", false, usagef(fmt.Sprintf("$%s: %v", env, err))
			}
			return v, "env", true, nil
		}
	}
	return nil, "", false, nil
}

// parseValue reads an environment variable; lists are comma-separated.
func parseValue(k optionKind, raw string) (any, error) {
	switch k {
	case kindStrings:
		var xs []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				xs = append(xs, s)
			}
		}
		return xs, nil
	case kindInt:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", raw)
		}
		return n, nil
	case kindDuration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration such as 90s or 10m", raw)
		}
		return d, nil
	case kindBool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", raw)
		}
		return b, nil
	}
	return raw, nil
}

// configValue converts a YAML value; strings go through parseValue so that
// "10m" and 10 both work where they make sense.
func configValue(k optionKind, raw any) (any, error) {
	switch v := raw.(type) {
	case string:
		if k == kindStrings {
			return []string{v}, nil
		}
		return parseValue(k, v)
	case []any:
		if k != kindStrings {
			return nil, fmt.Errorf("a list is not allowed here")
		}
		xs := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("list items must be strings")
			}
			xs = append(xs, s)
		}
		return xs, nil
	case uint64, int64, int:
		n, _ := strconv.Atoi(fmt.Sprint(v))
		if k == kindInt {
			return n, nil
		}
		if k == kindDuration {
			return nil, fmt.Errorf("write durations with a unit, such as \"90s\"")
		}
		return nil, fmt.Errorf("a number is not allowed here")
	case bool:
		if k == kindBool {
			return v, nil
		}
		return nil, fmt.Errorf("true/false is not allowed here")
	case nil:
		return nil, fmt.Errorf("empty value")
	}
	return nil, fmt.Errorf("unsupported value %v", raw)
}
