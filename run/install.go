package run

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/skills"
)

// Bounds on what an install may bring in.
const (
	maxInstallFiles = 2000
	maxInstallBytes = 100 << 20
	fileSkillsLock  = "skills.lock.json"
)

// InstallOptions are `harness skills install`.
type InstallOptions struct {
	Source         string   // a skill directory, or a .tar.gz/.tgz/.zip archive holding one
	Root           string   // the skills root to install into
	TrustedSources []string // path prefixes sources must lie under
	Force          bool     // replace an installed skill of the same name
	AllowRisky     bool     // install despite critical content findings
	Now            func() time.Time
}

// Installed reports a finished install.
type Installed struct {
	Name         string
	Dir          string
	Digest       artifacts.Digest
	Findings     []PolicyFinding
	InstallHints []string
}

// SkillsLock is skills.lock.json at a skills root: what was installed,
// from where, with what content.
type SkillsLock struct {
	artifacts.Envelope
	Skills map[string]LockEntry `json:"skills"`
}

// LockEntry is one installed skill.
type LockEntry struct {
	Source      string           `json:"source"`
	TreeDigest  artifacts.Digest `json:"treeDigest"`
	SkillDigest artifacts.Digest `json:"skillDigest"`
	InstalledAt time.Time        `json:"installedAt"`
	Findings    []PolicyFinding  `json:"findings"`
}

// InstallSkill copies a skill into a root without letting a malicious one
// in: the source must be trusted, the tree is unpacked into a staging
// directory inside the root (archive entries that escape, links that
// leave the skill, device files and oversize trees are refused), validated
// strictly and content-scanned there, and only then renamed into place.
// An interrupted install leaves the root as it was.
func InstallSkill(ctx context.Context, o InstallOptions) (*Installed, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	src, err := filepath.Abs(o.Source)
	if err != nil {
		return nil, usageErr("install_source_invalid", "%s: %v", o.Source, err)
	}
	if !trusted(src, o.TrustedSources) {
		return nil, policyErr("install_source_untrusted", "%s is not under a trusted source; add its directory to skills.trustedSources in the --config file (trusted now: %s)", o.Source, listOrNone(o.TrustedSources))
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, usageErr("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, usageErr("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	stage, err := os.MkdirTemp(root, ".harness-install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	tree := filepath.Join(stage, "skill")
	if err := unpack(src, tree); err != nil {
		return nil, err
	}
	// The skill is the unpacked directory holding SKILL.md, at the top or
	// one level down (archives usually wrap a directory).
	dir, err := skillDirIn(tree)
	if err != nil {
		return nil, err
	}
	// The installed directory is named after the skill, whatever the
	// source directory or archive was called: rename before validating.
	if pre, err := skills.Validate(ctx, dir, skills.ValidateOptions{}); err == nil && len(pre.Skills) == 1 && pre.Skills[0].Name != "" &&
		skills.ValidName(pre.Skills[0].Name) && filepath.Base(dir) != pre.Skills[0].Name {
		named := filepath.Join(stage, "named", pre.Skills[0].Name)
		if err := os.MkdirAll(filepath.Dir(named), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(dir, named); err != nil {
			return nil, err
		}
		dir = named
	}
	val, err := skills.Validate(ctx, dir, skills.ValidateOptions{Strict: true})
	if err != nil {
		return nil, usageErr("install_invalid", "validate %s: %v", o.Source, err)
	}
	if val.HasErrors() || len(val.Skills) != 1 {
		var msgs []string
		for _, s := range val.Skills {
			for _, d := range s.Diagnostics {
				if d.Severity == skills.SeverityError {
					msgs = append(msgs, d.Detail)
				}
			}
		}
		return nil, &Error{Code: "install_invalid", Exit: ExitFailed, Msg: fmt.Sprintf("%s is not a valid skill: %s", o.Source, strings.Join(msgs, "; "))}
	}
	name := val.Skills[0].Name
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{filepath.Dir(dir)}})
	if err != nil {
		return nil, err
	}
	s, ok := reg.Lookup(name)
	if !ok {
		return nil, &Error{Code: "install_invalid", Exit: ExitFailed, Msg: fmt.Sprintf("%s does not load as a skill", o.Source)}
	}
	findings := AuditSkill(s)
	for i := range findings {
		findings[i].Path = strings.TrimPrefix(findings[i].Path, dir+"/")
	}
	if slices.ContainsFunc(findings, func(f PolicyFinding) bool { return f.Severity == cfc.SeverityCritical }) && !o.AllowRisky {
		var rules []string
		for _, f := range findings {
			if f.Severity == cfc.SeverityCritical {
				rules = append(rules, fmt.Sprintf("%s (%s:%d)", f.Rule, f.Path, f.Line))
			}
		}
		return nil, policyErr("install_risky", "%s has critical findings: %s; nothing was installed (review it, then --allow-risky to install anyway)", o.Source, strings.Join(rules, ", "))
	}
	dest := filepath.Join(root, name)
	if _, err := os.Lstat(dest); err == nil && !o.Force {
		return nil, usageErr("install_exists", "a skill named %s is already installed at %s: pass --force to replace it", name, dest)
	}
	// Swap into place: the old copy moves aside first so that a failure
	// between the renames can be undone, and nothing half-written is
	// ever at the destination.
	old := ""
	if _, err := os.Lstat(dest); err == nil {
		old = filepath.Join(stage, "previous")
		if err := os.Rename(dest, old); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(dir, dest); err != nil {
		if old != "" {
			os.Rename(old, dest)
		}
		return nil, err
	}
	in := &Installed{Name: name, Dir: dest, Digest: s.TreeDigest, Findings: findings, InstallHints: s.InstallHints}
	if in.Findings == nil {
		in.Findings = []PolicyFinding{}
	}
	lock := SkillsLock{Envelope: artifacts.NewEnvelope("harness.skills-lock", 1), Skills: map[string]LockEntry{}}
	lockPath := filepath.Join(root, fileSkillsLock)
	if err := artifacts.ReadJSON(lockPath, "harness.skills-lock", 1, &lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return in, fmt.Errorf("read %s: %w", lockPath, err)
	}
	if lock.Skills == nil {
		lock.Skills = map[string]LockEntry{}
	}
	lock.Skills[name] = LockEntry{Source: src, TreeDigest: s.TreeDigest, SkillDigest: s.Digest, InstalledAt: now().UTC(), Findings: in.Findings}
	return in, artifacts.WriteJSON(lockPath, &lock)
}

func trusted(src string, prefixes []string) bool {
	for _, p := range prefixes {
		abs, err := filepath.Abs(p)
		if err == nil && (src == abs || strings.HasPrefix(src, abs+string(filepath.Separator))) {
			return true
		}
	}
	return false
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func skillDirIn(tree string) (string, error) {
	if fi, err := os.Stat(filepath.Join(tree, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
		return tree, nil
	}
	entries, _ := os.ReadDir(tree)
	if len(entries) == 1 && entries[0].IsDir() {
		d := filepath.Join(tree, entries[0].Name())
		if fi, err := os.Stat(filepath.Join(d, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
			return d, nil
		}
	}
	return "", usageErr("install_invalid", "no SKILL.md at the top of the source (or of its single top directory)")
}

// unpack copies a directory or extracts an archive into dst, refusing
// anything that could write outside dst or smuggle in special files.
func unpack(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return usageErr("install_source_invalid", "%s: %v", src, err)
	}
	w := &treeWriter{dst: dst}
	switch {
	case fi.IsDir():
		err = w.copyDir(src)
	case strings.HasSuffix(src, ".tar.gz") || strings.HasSuffix(src, ".tgz"):
		err = w.untar(src)
	case strings.HasSuffix(src, ".zip"):
		err = w.unzip(src)
	default:
		return usageErr("install_source_invalid", "%s is neither a directory nor a .tar.gz, .tgz or .zip archive", src)
	}
	return err
}

type treeWriter struct {
	dst   string
	files int
	bytes int64
}

func unsafeEntry(format string, args ...any) error {
	return policyErr("install_unsafe", format, args...)
}

// target checks an entry name and returns where it goes.
func (w *treeWriter) target(name string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(name, 0) {
		return "", unsafeEntry("archive entry %q escapes the skill directory; nothing was installed", name)
	}
	if clean == "." {
		return w.dst, nil
	}
	return filepath.Join(w.dst, filepath.FromSlash(clean)), nil
}

func (w *treeWriter) file(name string, mode fs.FileMode, r io.Reader) error {
	p, err := w.target(name)
	if err != nil {
		return err
	}
	w.files++
	if w.files > maxInstallFiles {
		return unsafeEntry("the source has more than %d files; nothing was installed", maxInstallFiles)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode.Perm()&0o755|0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, maxInstallBytes-w.bytes+1))
	f.Close()
	w.bytes += n
	if w.bytes > maxInstallBytes {
		return unsafeEntry("the source holds more than %d bytes; nothing was installed", maxInstallBytes)
	}
	return err
}

// link accepts a symbolic link only when it stays inside the skill.
func (w *treeWriter) link(name, dest string) error {
	p, err := w.target(name)
	if err != nil {
		return err
	}
	resolved := path.Join(path.Dir(strings.TrimPrefix(filepath.ToSlash(p), filepath.ToSlash(w.dst)+"/")), dest)
	if path.IsAbs(dest) || resolved == ".." || strings.HasPrefix(resolved, "../") {
		return unsafeEntry("symbolic link %s -> %s leaves the skill; nothing was installed", name, dest)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(dest, p)
}

func (w *treeWriter) copyDir(src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			t, err := w.target(rel)
			if err != nil {
				return err
			}
			return os.MkdirAll(t, 0o755)
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			dest, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return w.link(rel, dest)
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			info, _ := d.Info()
			return w.file(rel, info.Mode(), f)
		}
		return unsafeEntry("%s is a special file (%s); nothing was installed", rel, d.Type())
	})
}

func (w *treeWriter) untar(src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return usageErr("install_source_invalid", "%s: %v", src, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return usageErr("install_source_invalid", "%s: %v", src, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			t, err := w.target(h.Name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(t, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := w.file(h.Name, fs.FileMode(h.Mode), tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := w.link(h.Name, h.Linkname); err != nil {
				return err
			}
		default:
			return unsafeEntry("archive entry %s is a special file (type %c); nothing was installed", h.Name, h.Typeflag)
		}
	}
}

func (w *treeWriter) unzip(src string) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return usageErr("install_source_invalid", "%s: %v", src, err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			t, err := w.target(zf.Name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(t, 0o755); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			dest, _ := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			if err := w.link(zf.Name, string(dest)); err != nil {
				return err
			}
		case mode.IsRegular():
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			err = w.file(zf.Name, mode, rc)
			rc.Close()
			if err != nil {
				return err
			}
		default:
			return unsafeEntry("archive entry %s is a special file; nothing was installed", zf.Name)
		}
	}
	return nil
}
