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
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/workspace"
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
	// info is the user config file as opened, so a run can tell whether
	// its workspace holds it by identity, not by name.
	info fs.FileInfo
}

// configFlag is --config as every command that reads the config has it.
func configFlag(holds string) cli.Flag {
	return &cli.StringFlag{Name: "config", Usage: "YAML `FILE` with " + holds + "; without it $HARNESS_CONFIG, else " + userConfigShown + " when it exists"}
}

const userConfigShown = "$XDG_CONFIG_HOME/harness/config.yaml"

// userConfigPath is the operator's own config file:
// $XDG_CONFIG_HOME/harness/config.yaml, ~/.config/harness/config.yaml
// without it. A relative XDG_CONFIG_HOME is ignored, as the XDG base
// directory specification says, and a relative HOME gives none: either
// would make a file of the current directory (a repository) the user's.
func userConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		home := os.Getenv("HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(filepath.Clean(dir), "harness", "config.yaml")
}

// userConfigDir is the directory of the user config file ("" when there
// is none): runs whose workspace holds it keep it read-only.
func userConfigDir() string {
	if p := userConfigPath(); p != "" {
		return filepath.Dir(p)
	}
	return ""
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
	f, err := openUserConfig(userPath)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := ownFile(f, userPath); err != nil {
		return nil, err
	}
	if err := ownDirs(filepath.Dir(userPath)); err != nil {
		return nil, err
	}
	data, err := artifacts.ReadAtMost(f, maxOperatorFile)
	if err != nil {
		var tl *artifacts.TooLargeError
		if errors.As(err, &tl) {
			return nil, outcome.Usage("config_too_large", "config file %s: larger than %d MiB, the most harness reads for it", userPath, maxOperatorFile>>20)
		}
		return nil, outcome.Usage("config_unreadable", "config file %s: %v", userPath, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, outcome.Usage("config_unreadable", "config file %s: %v", userPath, err)
	}
	cf.path, cf.user, cf.data, cf.info = userPath, true, data, fi
	return cf, nil
}

// openUserConfig opens the user config file without following a link at
// its name (whoever can write the directory would pick which file is
// "the user config") and without blocking (a FIFO there would hang every
// command); ownFile then requires a regular file on the descriptor.
func openUserConfig(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	switch {
	case err == unix.ENOENT:
		return nil, fs.ErrNotExist
	case err == unix.ELOOP:
		return nil, outcome.Usage("config_unsafe", "config file %s is a symbolic link: harness reads the user config without being told to, so only a file at that name; replace the link by the file, or name it with --config", path)
	case err != nil:
		return nil, outcome.Usage("config_unreadable", "config file %s: %v", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	// Regular files ignore O_NONBLOCK; cleared so that reads behave as
	// they always do.
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_NONBLOCK)
	}
	return f, nil
}

// ownDirs refuses a user config whose directories someone else could
// change, as OpenSSH's StrictModes does for ~/.ssh: every directory from
// the file's up to / must belong to the user or to root and be writable
// by no one else, unless it is sticky (as /tmp) and the entry below it
// belongs to the user or root. Otherwise another user could rename the
// file away and put theirs, or a link, in its place.
func ownDirs(dir string) error {
	uid := uint32(os.Geteuid())
	below := uint32(0) // owner of the entry under dir, checked on the sticky rule
	first := true
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return outcome.Usage("config_unreadable", "config directory %s: %v", dir, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Uid != uid && st.Uid != 0 {
			return outcome.Usage("config_unsafe", "directory %s above the user config file belongs to uid %d, not to you (uid %d) or root: its owner could replace the file; chown it, or name a config with --config", dir, st.Uid, uid)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			sticky := fi.Mode()&fs.ModeSticky != 0
			if !sticky || first || (below != uid && below != 0) {
				return outcome.Usage("config_unsafe", "directory %s above the user config file can be written by other users (mode %04o): chmod go-w %s, or name a config with --config", dir, fi.Mode().Perm(), dir)
			}
		}
		below, first = st.Uid, false
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// outside refuses a user config file that lies inside the run's
// workspace: the model, skill scripts and commands write there, so a file
// they planted would widen the next run (allow tools, send the key to its
// base-url). Judged by identity: every directory from the file's up to /
// is compared with the workspace by device and inode, so neither a link
// nor a bind mount nor a second name hides it. A file named with --config
// or $HARNESS_CONFIG is the operator's choice and is not judged.
func (c *configFile) outside(workspace string) error {
	if c == nil || !c.user || c.info == nil {
		return nil
	}
	wi, err := os.Stat(workspace)
	if err != nil {
		// The run refuses a missing workspace with its own message.
		return nil
	}
	dir := filepath.Dir(c.path)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for {
		if di, err := os.Stat(dir); err == nil && os.SameFile(di, wi) {
			return outcome.Usage("config_in_workspace", "config file %s lies inside the workspace %s, where the model and skill code write: harness does not read it as the user config; move it out of the workspace, or name it with --config if you wrote it", c.path, workspace)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// protectUserConfig is the user config directory when workspace holds
// it, for the run to keep read-only, so that no tool writes a config the
// next run would read. It is created (mode 0700) when missing, so that
// the sandboxes have a directory to bind read-only.
func protectUserConfig(ws string) (string, error) {
	dir := userConfigDir()
	if dir == "" {
		return "", nil
	}
	wsAbs, err := filepath.Abs(ws)
	if err != nil {
		return "", nil
	}
	if real, err := filepath.EvalSymlinks(wsAbs); err == nil {
		wsAbs = real
	}
	dirReal := dir
	// The nearest existing ancestor gives the real path of a directory
	// not yet made.
	for rest := ""; ; {
		if real, err := filepath.EvalSymlinks(dirReal); err == nil {
			dirReal = filepath.Join(real, rest)
			break
		}
		parent := filepath.Dir(dirReal)
		if parent == dirReal {
			break
		}
		rest = filepath.Join(filepath.Base(dirReal), rest)
		dirReal = parent
	}
	if !workspace.Within(wsAbs, dirReal) {
		return "", nil
	}
	if err := os.MkdirAll(dirReal, 0o700); err != nil {
		return "", outcome.Usage("config_unprotected", "the workspace %s holds the user config directory %s, which harness keeps read-only, and it could not be made: %v", ws, dirReal, err)
	}
	return dirReal, nil
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
		return nil, outcome.Usage("config_invalid", "%s: invalid YAML: %s", c.name(), yamlsafe.Reason(err))
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
		msg := yamlPosition.ReplaceAllString(yamlsafe.Reason(err), "")
		return s, usagef(fmt.Sprintf("%s: skills: %s (its keys are trustedSources and sources)", c.name(), msg))
	}
	return s, nil
}

var yamlPosition = regexp.MustCompile(`^line \d+, column \d+: `)

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
