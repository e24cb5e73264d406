package scripts

import (
	"io/fs"
	"os"
	"path/filepath"
)

// A staged tree (a skill's verified copy, a draft under test) is made
// read-only before a script runs against it, so that the script cannot
// change what it runs from; these two helpers seal and remove one.

// SealDirs makes dir and every directory below it read-only (0555),
// once its files are in place. Directories are sealed after the walk, so
// the walk never depends on what a sealed directory allows.
func SealDirs(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for _, d := range dirs {
		os.Chmod(d, 0o555)
	}
}

// RemoveSealed deletes a tree sealed with SealDirs: directories are made
// writable again first, which removing their entries needs (but root).
func RemoveSealed(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(dir)
}
