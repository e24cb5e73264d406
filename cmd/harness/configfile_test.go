package main

import (
	"os"
	"path/filepath"
	"testing"
)

// userConfigPath takes XDG_CONFIG_HOME and HOME only when absolute: a
// relative one would make a file of the current directory the user's.
func TestUserConfigPathNeedsAbsolute(t *testing.T) {
	for _, tc := range []struct{ xdg, home, want string }{
		{"/x", "/h", "/x/harness/config.yaml"},
		{"", "/h", "/h/.config/harness/config.yaml"},
		{"rel", "/h", "/h/.config/harness/config.yaml"},
		{".", "/h", "/h/.config/harness/config.yaml"},
		{"", ".", ""},
		{"", "", ""},
		{"rel", "home", ""},
		{"/x/../y", "", "/y/harness/config.yaml"},
	} {
		t.Setenv("XDG_CONFIG_HOME", tc.xdg)
		t.Setenv("HOME", tc.home)
		if got := userConfigPath(); got != tc.want {
			t.Errorf("XDG_CONFIG_HOME=%q HOME=%q: %q, want %q", tc.xdg, tc.home, got, tc.want)
		}
	}
}

// ownDirs refuses a directory above the config that others can write,
// unless it is sticky and above the first level, as /tmp is.
func TestOwnDirs(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "a", "harness")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mode   map[string]os.FileMode
		refuse bool
	}{
		{"private", nil, false},
		{"config dir 0777", map[string]os.FileMode{dir: 0o777}, true},
		{"config dir sticky 1777", map[string]os.FileMode{dir: os.ModeSticky | 0o777}, true},
		{"parent 0775", map[string]os.FileMode{filepath.Dir(dir): 0o775}, true},
		{"parent sticky 1777", map[string]os.FileMode{filepath.Dir(dir): os.ModeSticky | 0o777}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []string{dir, filepath.Dir(dir)} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for d, m := range tc.mode {
				if err := os.Chmod(d, m); err != nil {
					t.Fatal(err)
				}
			}
			if err := ownDirs(dir); (err != nil) != tc.refuse {
				t.Fatalf("ownDirs: %v, want refused %v", err, tc.refuse)
			}
		})
	}
}
