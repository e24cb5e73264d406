package scripts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// HelperArg is the hidden first argument that makes the harness binary
// act as the Landlock helper: it confines itself, then execs the runtime.
// Confinement must happen in a fresh process because Landlock and seccomp
// apply to the whole process and can never be lifted.
const HelperArg = "__harness-landlock-exec"

// landlockArgs builds the helper's command line. uid >= 0 makes the
// helper switch to that user (and its group) once confined.
func landlockArgs(helper string, uid int, ro, rw, roFiles, rwFiles, readDirs []string, argv []string) []string {
	out := []string{helper, HelperArg}
	if uid >= 0 {
		out = append(out, "--uid", strconv.Itoa(uid))
	}
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
// confines itself, gives up every privilege, then runs the script as its
// child and stays as the subreaper of the script's whole tree: when the
// script ends, or harness tells it to stop (SIGTERM), every descendant
// still alive is killed, including daemons that left with setsid and a
// double fork. Without a pid namespace nothing else would catch those.
func HelperMain(args []string) int {
	var ro, rw, roFiles, rwFiles, readDirs []string
	uid := -1
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
		case "--uid":
			n, err := strconv.Atoi(args[i+1])
			if err != nil || n < 0 {
				fmt.Fprintln(os.Stderr, "harness sandbox helper: bad --uid")
				return 2
			}
			uid = n
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
	if err := dropPrivileges(uid); err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: %v\n", err)
		return 126
	}
	return superviseTree(argv)
}

// dropPrivileges empties every capability set (bounding and ambient
// first, while CAP_SETPCAP is still held), then switches to uid and its
// group when uid >= 0. A helper started as root must not leave the script
// root: mknod, sethostname and reading root-owned files all follow from it.
func dropPrivileges(uid int) error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL && err != unix.EPERM {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if uid >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(uid, uid, uid); err != nil {
			return fmt.Errorf("setresgid: %w", err)
		}
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return fmt.Errorf("setresuid: %w", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// superviseTree runs argv as a child, as its subreaper, and returns its
// exit status once the child and every descendant are gone.
func superviseTree(argv []string) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: subreaper: %v\n", err)
		return 126
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: exec %s: %v\n", argv[0], err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-stop:
		killDescendants()
		werr = <-done
	}
	killDescendants()
	return passExit(werr)
}

// passExit ends a helper as its child ended: the same exit code, or the
// same signal (so harness sees what it would without a helper).
func passExit(werr error) int {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signal.Reset()
			syscall.Kill(os.Getpid(), ws.Signal())
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 127
}

// killDescendants kills and reaps every child the helper has; as the
// subreaper it inherits each orphaned descendant, so it repeats until
// none is left.
func killDescendants() {
	for range 200 {
		kids := childrenOf(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func childrenOf(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
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

// denySockets installs a seccomp filter: socket() of every family, and
// io_uring (which can open sockets too), fail with EACCES. AF_UNIX is
// refused too: Landlock does not govern connecting to a socket file, and
// a host socket (docker.sock, the D-Bus bus) is a way out of the sandbox.
// socketpair() stays allowed: an unnamed pair reaches nothing outside.
func denySockets() error {
	return installFilter(socketFilter())
}

// installFilter loads prog for every thread of this process (TSYNC);
// no_new_privs must already be set.
func installFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 1 /* TSYNC */, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// socketFilter is the classic BPF program the sandboxes load: bwrap reads
// it from a file descriptor (--seccomp), the Landlock helper and the
// egress forwarder's child install it. socket() fails with EACCES unless
// its family is one of allowFamilies (none: every socket is refused).
func socketFilter(allowFamilies ...uint32) []unix.SockFilter {
	const (
		auditArchX86_64 = 0xc000003e
		retAllow        = 0x7fff0000
		retErrno        = 0x00050000
		retKill         = 0x80000000
		argFamily       = 16 // seccomp_data.args[0], low half on little-endian
	)
	eacces := uint32(retErrno | uint32(unix.EACCES))
	n := uint8(len(allowFamilies))
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: auditArchX86_64, Jt: 1, Jf: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: retKill},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // syscall number
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_SETUP, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: eacces},
		// Not socket(): on to the final allow, past the family checks.
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SOCKET, Jt: 0, Jf: n + 2},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: argFamily},
	}
	for i, f := range allowFamilies {
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: f, Jt: n - uint8(i), Jf: 0})
	}
	return append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: eacces},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: retAllow})
}

// encodeFilter lays a program out as the kernel's struct sock_filter
// array, which is what bwrap --seccomp expects to read.
func encodeFilter(prog []unix.SockFilter) []byte {
	out := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		out = binary.LittleEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.LittleEndian.AppendUint32(out, f.K)
	}
	return out
}

// landlockRules computes what the confined process may touch: system
// directories read-only; each writable mount read-write except the paths
// to hide, which get no access at all (Landlock rights are inherited by a
// whole tree, so a hidden path is carved out by granting its siblings).
func landlockRules(spec Spec, bin, tmp string) (ro, rw, roFiles, rwFiles, readDirs []string) {
	ro = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", filepath.Dir(bin)}
	for _, e := range etcAllowed {
		p := "/etc/" + e
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			ro = append(ro, p)
		} else {
			roFiles = append(roFiles, p)
		}
	}
	// Not /dev/tty: a script has no business with the operator's terminal.
	rwFiles = []string{"/dev/null", "/dev/zero", "/dev/full"}
	roFiles = append(roFiles, "/dev/urandom", "/dev/random")
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
	out, err := execOutput(landlockArgs(helper, -1, []string{"/usr", "/bin", "/lib", "/lib64"}, nil, nil, []string{"/dev/null"}, nil, []string{"/bin/true"}))
	if err != nil {
		return fmt.Errorf("landlock helper: %v: %s", err, strings.TrimSpace(out))
	}
	return nil
}
