package scripts

import (
	"bytes"
	"os"
)

// LookupProgram finds name on PATH as LookupBinary does, and, where no
// ELF binary has that name, an executable script that starts with "#!/"
// (npm, whose file is JavaScript run through /usr/bin/env node). A script
// found so runs only where its interpreter may run too.
func LookupProgram(name, path string) (string, error) {
	p, notFound := LookupBinary(name, path)
	if notFound == nil {
		return p, nil
	}
	if p, ok := lookupOnPath(name, path, isScript); ok {
		return p, nil
	}
	return "", notFound
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
