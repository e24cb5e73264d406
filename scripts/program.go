package scripts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// LookupProgram finds name on PATH as LookupBinary does, and, where no
// ELF binary has that name, an executable script that starts with "#!/"
// (npm, whose file is JavaScript run through /usr/bin/env node). A script
// found so runs only where its interpreter may run too.
func LookupProgram(name, path string) (string, error) {
	if p, err := LookupBinary(name, path); err == nil {
		return p, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && isScript(p) {
			return p, nil
		}
	}
	return "", errors.New(name + " not found on PATH")
}

func isScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [3]byte
	n, _ := f.Read(head[:])
	return n == 3 && bytes.Equal(head[:], []byte("#!/"))
}
