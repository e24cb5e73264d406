package scripts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// HelperArg is the hidden first argument that makes the harness binary
// act as the Landlock helper: it confines itself, then execs the runtime.
// Confinement must happen in a fresh process because Landlock and seccomp
// apply to the whole process and can never be lifted.
const HelperArg = "__harness-landlock-exec"

// landlockArgs builds the helper's command line.
func landlockArgs(helper string, ro, rw, roFiles, rwFiles, readDirs []string, argv []string) []string {
	out := []string{helper, HelperArg}
	add := func(flag string, ps []string) {
		for _, p := range ps {
			out = append(out, flag, p)
		}
	}
	add("--ro", ro)
	add("--rw", rw)
	add("--ro-file", roFiles)
	add("--rw-file", rwFiles)
	add("--read-dir", readDirs)
	return append(append(out, "--"), argv...)
}

// HelperMain is the helper's entry point (os.Args after HelperArg). It
// returns only on failure; on success the runtime replaces the process.
func HelperMain(args []string) int {
	var ro, rw, roFiles, rwFiles, readDirs []string
	i := 0
	for ; i < len(args) && args[i] != "--"; i += 2 {
		if i+1 >= len(args) {
			fmt.Fprintln(os.Stderr, "harness sandbox helper: bad arguments")
			return 2
		}
		switch args[i] {
		case "--ro":
			ro = append(ro, args[i+1])
		case "--rw":
			rw = append(rw, args[i+1])
		case "--ro-file":
			roFiles = append(roFiles, args[i+1])
		case "--rw-file":
			rwFiles = append(rwFiles, args[i+1])
		case "--read-dir":
			readDirs = append(readDirs, args[i+1])
		default:
			fmt.Fprintf(os.Stderr, "harness sandbox helper: unknown flag %s\n", args[i])
			return 2
		}
	}
	if i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "harness sandbox helper: no command")
		return 2
	}
	argv := args[i+1:]
	if err := confine(ro, rw, roFiles, rwFiles, readDirs); err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: %v\n", err)
		return 126
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "harness sandbox helper: exec %s: %v\n", argv[0], err)
	return 127
}

// confine applies no_new_privs, Landlock (file system, TCP, IPC scopes)
// and a seccomp filter that refuses every socket but Unix ones.
func confine(ro, rw, roFiles, rwFiles, readDirs []string) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	rules := []landlock.Rule{
		landlock.RODirs(ro...).IgnoreIfMissing(),
		landlock.RWDirs(rw...),
		landlock.ROFiles(roFiles...).IgnoreIfMissing(),
		landlock.RWFiles(rwFiles...).IgnoreIfMissing(),
		landlock.PathAccess(landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_READ_DIR), readDirs...),
	}
	// Strict about the file system (ABI 1 is enough for it); best effort
	// for what newer kernels add (TCP, IPC scopes): seccomp covers sockets.
	if err := landlock.V7.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return denySockets()
}

// denySockets installs a seccomp filter: socket() with a family other than
// AF_UNIX, and io_uring (which can open sockets too), fail with EACCES.
func denySockets() error {
	const (
		auditArchX86_64 = 0xc000003e
		retAllow        = 0x7fff0000
		retErrno        = 0x00050000
		retKill         = 0x80000000
	)
	eacces := uint32(retErrno | uint32(unix.EACCES))
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: auditArchX86_64, Jt: 1, Jf: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: retKill},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // syscall number
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_SETUP, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: eacces},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SOCKET, Jt: 1, Jf: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16}, // args[0], low 32 bits
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AF_UNIX, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
		{Code: unix.BPF_RET | unix.BPF_K, K: eacces},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 1 /* TSYNC */, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// landlockRules computes what the confined process may touch: system
// directories read-only; each writable mount read-write except the paths
// to hide, which get no access at all (Landlock rights are inherited by a
// whole tree, so a hidden path is carved out by granting its siblings).
func landlockRules(spec Spec, bin, tmp string) (ro, rw, roFiles, rwFiles, readDirs []string) {
	ro = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc", filepath.Dir(bin)}
	rwFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
	roFiles = []string{"/dev/urandom", "/dev/random"}
	rw = []string{tmp}
	for _, m := range spec.Mounts {
		if !m.Writable {
			ro = append(ro, m.Host)
			continue
		}
		carve(m.Host, spec.HideHost, &rw, &rwFiles, &readDirs)
	}
	return
}

func carve(dir string, hide []string, rw, rwFiles, readDirs *[]string) {
	var inside []string
	for _, h := range hide {
		if h == dir {
			return
		}
		if strings.HasPrefix(h, dir+"/") {
			inside = append(inside, h)
		}
	}
	if len(inside) == 0 {
		*rw = append(*rw, dir)
		return
	}
	*readDirs = append(*readDirs, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			carve(p, inside, rw, rwFiles, readDirs)
		case e.Type().IsRegular():
			*rwFiles = append(*rwFiles, p)
		}
	}
}

// probeLandlock checks that the kernel offers Landlock and the helper can
// confine itself and exec.
func probeLandlock(helper string) error {
	if helper == "" {
		return errors.New("no helper binary to apply Landlock")
	}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno != 0 || abi < 1 {
		return fmt.Errorf("the kernel does not offer Landlock: %v", errno)
	}
	out, err := execOutput(landlockArgs(helper, []string{"/usr", "/bin", "/lib", "/lib64"}, nil, nil, []string{"/dev/null"}, nil, []string{"/bin/true"}))
	if err != nil {
		return fmt.Errorf("landlock helper: %v: %s", err, strings.TrimSpace(out))
	}
	return nil
}
