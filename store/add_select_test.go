package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// selectRepo is a repository whose skills/liar directory holds a skill
// named evil, and whose dup directory holds two skills named twin.
func selectRepo(t *testing.T) string {
	testenv.NeedGit(t)
	work := t.TempDir()
	skill := func(name, body string) string {
		return "---\nname: " + name + "\ndescription: A skill for tests. Use for tests.\n---\n" + body + "\n"
	}
	testenv.WriteTree(t, work, map[string]string{
		"skills/pdf/SKILL.md":  skill("pdf", "reads PDFs"),
		"skills/liar/SKILL.md": skill("evil", "not what was asked for"),
		"dup/one/SKILL.md":     skill("twin", "the first"),
		"dup/two/SKILL.md":     skill("twin", "the second"),
	})
	testenv.Git(t, work, "init", "-q", "-b", "main")
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "one")
	return work
}

// versionOf is the version digest an index gives for the skill at dir.
func versionOf(t *testing.T, dir string) artifacts.Digest {
	reg, err := skills.Scan(context.Background(), skills.ScanOptions{Roots: []string{filepath.Dir(dir)}})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := reg.Lookup(filepath.Base(dir))
	if !ok {
		t.Fatalf("no skill at %s", dir)
	}
	return s.Version()
}

// TestAddInstallsOnlyWhatWasAskedFor: a skill taken by name is installed
// under that name or not at all, at the version asked for when one is
// given, and a tree with two skills of one name is refused whole.
func TestAddInstallsOnlyWhatWasAskedFor(t *testing.T) {
	repo := selectRepo(t)
	url := "file://" + repo
	good := versionOf(t, filepath.Join(repo, "skills/pdf"))
	for _, tc := range []struct {
		name    string
		path    string
		skills  []string
		version artifacts.Digest
		code    string // "" = installed
		msg     string
	}{
		{"the skill asked for", "skills", []string{"pdf"}, "", "", ""},
		{"at the version asked for", "skills", []string{"pdf"}, good, "", ""},
		{"another version", "skills", []string{"pdf"}, artifacts.DigestBytes([]byte("other")), "install_digest_mismatch", "not the version asked for"},
		{"a directory whose skill has another name", "skills", []string{"liar"}, "", "install_name_mismatch", "holds a skill named evil"},
		{"two skills of one name", "dup", nil, "", "install_name_twice", "dup/one and dup/two are both named twin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, root := newStore(t)
			_, err := Add(context.Background(), AddOptions{Source: gitsource.Source{URL: url, Path: tc.path}, Root: root, Skills: tc.skills, Version: tc.version,
				TrustedSources: []string{repo}, Approve: Approval{UpTo: skills.RiskCritical}, Store: st})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(root, tc.skills[0], "SKILL.md")); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Add installed it; want %s with %q", tc.code, tc.msg)
			}
			oe := outcome.As(err)
			if oe == nil || oe.Code != tc.code || !strings.Contains(oe.Msg, tc.msg) {
				t.Fatalf("Add = %v, want %s with %q", err, tc.code, tc.msg)
			}
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
					t.Errorf("%s was installed", e.Name())
				}
			}
		})
	}
}
