package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/goccy/go-yaml"
	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/yamlsafe"
)

// configFile is the config file one command read: run settings under the
// flag names of harness run, and the skills section (trustedSources,
// sources). Every command that reads it finds it the same way
// (findConfig) and reads it once.
type configFile struct {
	path string // "" when none was read
	// user is set when the file is the user's own config file rather
	// than one named by --config or $HARNESS_CONFIG.
	user bool
	data []byte
	// userPath is the user config file harness looks for ("" when the
	// system has no user config directory).
	userPath string
}

// configFlag is --config as every command that reads the config has it.
func configFlag(holds string) cli.Flag {
	return &cli.StringFlag{Name: "config", Usage: "YAML `FILE` with " + holds + "; without it $HARNESS_CONFIG, else " + userConfigShown + " when it exists"}
}

const userConfigShown = "$XDG_CONFIG_HOME/harness/config.yaml"

// userConfigPath is the operator's own config file:
// $XDG_CONFIG_HOME/harness/config.yaml, ~/.config/harness/config.yaml
// without it.
func userConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "harness", "config.yaml")
}

// findConfig reads the config file of a command: --config FILE, else
// $HARNESS_CONFIG, else the user's own config file when it exists, else
// none. Never a file of the workspace or of the current directory: the
// config trusts skill sources and sets what a run may do, and a file that
// arrives with a repository, or that a model wrote into the workspace,
// would grant itself that. A repository's config is read when the
// operator names it.
func findConfig(cmd *cli.Command) (*configFile, error) {
	userPath := userConfigPath()
	named := cmd.String("config")
	if named == "" {
		named = os.Getenv("HARNESS_CONFIG")
	}
	if named != "" {
		data, err := readFlagFile("config", named, maxOperatorFile)
		if err != nil {
			return nil, err
		}
		return &configFile{path: named, data: data, userPath: userPath}, nil
	}
	cf := &configFile{userPath: userPath}
	if userPath == "" {
		return cf, nil
	}
	f, err := os.Open(userPath)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return nil, outcome.Usage("config_unreadable", "config file %s: %v", userPath, err)
	}
	defer f.Close()
	if err := ownFile(f, userPath); err != nil {
		return nil, err
	}
	data, err := artifacts.ReadAtMost(f, maxOperatorFile)
	if err != nil {
		return nil, flagFileError("config", userPath, maxOperatorFile, err)
	}
	cf.path, cf.user, cf.data = userPath, true, data
	return cf, nil
}

// ownFile refuses a user config file that someone else could have
// written: it is read without being named, and it grants trust. Judged on
// the opened descriptor, so a file swapped after the check is not read.
func ownFile(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return outcome.Usage("config_unreadable", "config file %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return outcome.Usage("config_unsafe", "config file %s is not a regular file", path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
		return outcome.Usage("config_unsafe", "config file %s belongs to uid %d, not to you (uid %d): harness reads it without being told to, so only your own; chown it, or name a file with --config", path, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return outcome.Usage("config_unsafe", "config file %s can be written by other users (mode %04o): chmod go-w %s", path, fi.Mode().Perm(), path)
	}
	return nil
}

// name is how messages name the file.
func (c *configFile) name() string {
	if c.user {
		return "config file " + c.path
	}
	return "--config " + c.path
}

// read says which config file was read, for a refusal that the config
// could lift.
func (c *configFile) read() string {
	switch {
	case c.path != "" && c.user:
		return "config read: " + c.path + " (the user config file)"
	case c.path != "":
		return "config read: " + c.path + " (named by --config or $HARNESS_CONFIG)"
	case c.userPath != "":
		return "no config file was read: name one with --config FILE or $HARNESS_CONFIG, or write " + c.userPath
	}
	return "no config file was read: name one with --config FILE or $HARNESS_CONFIG"
}

// top decodes the file and checks its keys: the flag names of harness
// run, and skills.
func (c *configFile) top() (map[string]any, error) {
	cfg := map[string]any{}
	if c == nil || c.path == "" {
		return cfg, nil
	}
	if err := yamlsafe.Unmarshal(c.path, c.data, &cfg, yaml.Strict()); err != nil {
		return nil, usagef(fmt.Sprintf("%s: invalid YAML: %v", c.name(), err))
	}
	for k := range cfg {
		if k != "skills" && !slices.ContainsFunc(runOptions, func(o option) bool { return o.name == k }) {
			return nil, usagef(fmt.Sprintf("%s: unknown key %q (keys are skills and the flag names of `harness run`, e.g. model, max-turns)", c.name(), k))
		}
	}
	return cfg, nil
}

// runSettings are the file's settings of harness run, by flag name.
func (c *configFile) runSettings() (map[string]any, error) {
	cfg, err := c.top()
	if err != nil {
		return nil, err
	}
	delete(cfg, "skills")
	return cfg, nil
}

// skillsSection is the skills: section of the config file, the settings
// of harness skills (and of a run's discovery tools).
type skillsSection struct {
	TrustedSources []string           `yaml:"trustedSources"`
	Sources        []discovery.Source `yaml:"sources"`
}

func (c *configFile) skills() (skillsSection, error) {
	var s skillsSection
	cfg, err := c.top()
	if err != nil || cfg["skills"] == nil {
		return s, err
	}
	// Strict, so that a misspelt key is an error, not a source nobody
	// trusts or indexes nobody asks.
	b, err := yaml.Marshal(cfg["skills"])
	if err == nil {
		err = yaml.UnmarshalWithOptions(b, &s, yaml.Strict())
	}
	if err != nil {
		// Positions are in the section as re-encoded, not in the file.
		msg := yamlPosition.ReplaceAllString(yaml.FormatError(err, false, false), "")
		return s, usagef(fmt.Sprintf("%s: skills: %s (its keys are trustedSources and sources)", c.name(), msg))
	}
	return s, nil
}

var yamlPosition = regexp.MustCompile(`^\[\d+:\d+\] `)

// trustedSources are skills.trustedSources: directories (relative ones
// are relative to the file) and URL prefixes.
func (c *configFile) trustedSources() ([]string, error) {
	s, err := c.skills()
	if err != nil || len(s.TrustedSources) == 0 {
		return nil, err
	}
	var out []string
	for _, p := range s.TrustedSources {
		// A prefix gitsource would refuse as a source trusts nothing:
		// say so rather than leave the operator wondering.
		if strings.Contains(p, "://") {
			if err := gitsource.CheckURL(p); err != nil {
				return nil, usagef(fmt.Sprintf("%s: skills.trustedSources %s is refused: %v", c.name(), p, err))
			}
		}
		if !filepath.IsAbs(p) && !strings.Contains(p, "://") {
			p = filepath.Join(filepath.Dir(c.path), p)
		}
		out = append(out, p)
	}
	return out, nil
}

// skillSources are skills.sources, the skill indexes: a relative path is
// relative to the file.
func (c *configFile) skillSources() ([]discovery.Source, error) {
	s, err := c.skills()
	if err != nil || len(s.Sources) == 0 {
		return nil, err
	}
	seen := map[string]bool{}
	for i, src := range s.Sources {
		switch {
		case src.Name == "" || src.URL == "":
			return nil, usagef(fmt.Sprintf("%s: skills.sources[%d] needs a name and a url", c.name(), i))
		case src.Name == discovery.FromLocal || src.Name == "all" || seen[src.Name]:
			return nil, usagef(fmt.Sprintf("%s: skills.sources[%d]: the name %q is taken", c.name(), i, src.Name))
		}
		seen[src.Name] = true
		if !strings.Contains(src.URL, "://") && !filepath.IsAbs(src.URL) {
			s.Sources[i].URL = filepath.Join(filepath.Dir(c.path), src.URL)
		}
	}
	return s.Sources, nil
}

// explainTrust adds to a refusal of an untrusted source which config file
// was read: the file that would trust it.
func explainTrust(err error, c *configFile) error {
	var oe *outcome.Error
	if errors.As(err, &oe) && oe.Code == "install_source_untrusted" {
		oe.Msg += "; " + c.read()
	}
	return err
}
