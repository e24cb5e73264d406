package scripts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// HelperArg is the hidden first argument that makes the harness binary
// act as the Landlock helper: it confines itself, then execs the runtime.
// Confinement must happen in a fresh process because Landlock and seccomp
// apply to the whole process and can never be lifted.
const HelperArg = "__harness-landlock-exec"

// helperRules is what the helper confines itself to: the file-system
// layer (paths by access), and the execute layer when LimitExec is set.
type helperRules struct {
	uid                                int // >= 0: switch to this user (and its group) once confined
	ro, rw, roFiles, rwFiles, readDirs []string
	// beneath are the mounts' host directories: a rule path inside one is
	// opened beneath it without following a symbolic link, by the helper,
	// and the rule made on that descriptor (see pin).
	beneath []string
	// execLayerOnly applies only the execute layer: inside bwrap, whose
	// mounts and socket filter already confine the rest.
	execLayerOnly bool
	// confined is the supervised child's part: confine, give up every
	// privilege and become the script; the helper that started it stays
	// outside the Landlock domain to see and kill the script's tree.
	confined  bool
	limitExec bool
	exec      []string // files, and directories of files, that may be executed under limitExec
	// noexec makes every mount of the sandbox noexec but those at
	// execMounts before confining (bwrap only, which gives the helper
	// CAP_SYS_ADMIN in the sandbox's user namespace for it).
	noexec     bool
	execMounts []string
	// keepModes are the read-only paths whose modes the helper records
	// before the script and restores after it: Landlock has no right for
	// chmod, so a confined script can change the mode of a path it may
	// only read (its owner, or root owning it).
	keepModes []string
	// scriptGoRace is the script's own GORACE (hasScriptGoRace: it has
	// one), which harness hands the helper here rather than in its
	// environment: a race-built helper reads GORACE as it starts, and a
	// script's value must not steer, or stop, it (see goRace).
	scriptGoRace    string
	hasScriptGoRace bool
}

// args builds the helper's command line for argv.
func (h helperRules) args(helper string, argv []string) []string {
	out := []string{helper, HelperArg}
	if h.uid >= 0 {
		out = append(out, "--uid", strconv.Itoa(h.uid))
	}
	if h.execLayerOnly {
		out = append(out, "--exec-layer-only", "1")
	}
	if h.confined {
		out = append(out, "--confined", "1")
	}
	if h.limitExec {
		out = append(out, "--limit-exec", "1")
	}
	if h.noexec {
		out = append(out, "--noexec", "1")
	}
	if h.hasScriptGoRace {
		out = append(out, "--script-gorace", h.scriptGoRace)
	}
	add := func(flag string, ps []string) {
		for _, p := range ps {
			out = append(out, flag, p)
		}
	}
	add("--ro", h.ro)
	add("--rw", h.rw)
	add("--ro-file", h.roFiles)
	add("--rw-file", h.rwFiles)
	add("--read-dir", h.readDirs)
	add("--beneath", h.beneath)
	add("--exec", h.exec)
	add("--exec-mount", h.execMounts)
	add("--keep-mode", h.keepModes)
	return append(append(out, "--"), argv...)
}

// HelperMain is the helper's entry point (os.Args after HelperArg). It
// starts a copy of itself that confines itself, gives up every privilege
// and becomes the script, and stays outside that Landlock domain as the
// subreaper of the script's whole tree: when the script ends, or harness
// tells it to stop (SIGTERM), every descendant still alive is killed,
// including daemons that left with setsid and a double fork. Without a
// pid namespace nothing else would catch those.
func HelperMain(args []string) int {
	h := helperRules{uid: -1}
	i := 0
	for ; i < len(args) && args[i] != "--"; i += 2 {
		if i+1 >= len(args) {
			fmt.Fprintln(os.Stderr, "harness sandbox helper: bad arguments")
			return 2
		}
		v := args[i+1]
		switch args[i] {
		case "--ro":
			h.ro = append(h.ro, v)
		case "--rw":
			h.rw = append(h.rw, v)
		case "--ro-file":
			h.roFiles = append(h.roFiles, v)
		case "--rw-file":
			h.rwFiles = append(h.rwFiles, v)
		case "--read-dir":
			h.readDirs = append(h.readDirs, v)
		case "--beneath":
			h.beneath = append(h.beneath, v)
		case "--exec":
			h.exec = append(h.exec, v)
		case "--exec-layer-only":
			h.execLayerOnly = v == "1"
		case "--confined":
			h.confined = v == "1"
		case "--limit-exec":
			h.limitExec = v == "1"
		case "--noexec":
			h.noexec = v == "1"
		case "--script-gorace":
			h.scriptGoRace, h.hasScriptGoRace = v, true
		case "--exec-mount":
			h.execMounts = append(h.execMounts, v)
		case "--keep-mode":
			h.keepModes = append(h.keepModes, v)
		case "--uid":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				fmt.Fprintln(os.Stderr, "harness sandbox helper: bad --uid")
				return 2
			}
			h.uid = n
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
	if h.noexec {
		// Before Landlock, which forbids a confined process to mount.
		if err := noexecMounts(h.execMounts); err != nil {
			fmt.Fprintf(os.Stderr, "harness sandbox helper: %v\n", err)
			return 126
		}
	}
	if h.execLayerOnly || h.confined {
		// Inside bwrap, whose pid namespace ends the whole tree with the
		// call, or the child of a supervising helper: become the script
		// rather than wait for it.
		if err := confine(h); err != nil {
			fmt.Fprintf(os.Stderr, "harness sandbox helper: %v\n", err)
			return 126
		}
		if err := dropPrivileges(h.uid); err != nil {
			fmt.Fprintf(os.Stderr, "harness sandbox helper: %v\n", err)
			return 126
		}
		env := withoutGoRace(os.Environ())
		if h.hasScriptGoRace {
			env = append(env, goRace+"="+h.scriptGoRace)
		}
		err := syscall.Exec(argv[0], argv, env)
		fmt.Fprintf(os.Stderr, "harness sandbox helper: exec %s: %v\n", argv[0], err)
		return 127
	}
	modes, err := recordModes(h.keepModes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: protected_path: %v; nothing was run\n", err)
		return 126
	}
	// The helper itself stays unconfined and runs nothing it was given:
	// confined, it could not read the list of its own children in /proc
	// (its Landlock rules refuse /proc), so a daemon that left with setsid
	// would outlive the call. A re-executed helper confines itself and
	// becomes the script.
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: exec %s: %v\n", argv[0], err)
		return 127
	}
	child := h
	child.confined, child.noexec, child.execMounts, child.keepModes = true, false, nil, nil
	return superviseTree(child.args("/proc/self/exe", append([]string{prog}, argv[1:]...)), func() bool {
		changed := restoreModes(modes)
		if len(changed) > 0 {
			fmt.Fprintf(os.Stderr, "harness sandbox helper: protected_path: the script changed the mode of %s, read-only; harness set it back and fails the call\n", strings.Join(changed, ", "))
		}
		return len(changed) > 0
	})
}

// maxKeptModes bounds the entries whose modes the helper records.
const maxKeptModes = 100_000

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

// confine applies no_new_privs, Landlock (file system, TCP, IPC scopes)
// and a seccomp filter that refuses every socket but Unix ones; with
// limitExec, a second Landlock layer that handles only the execute right
// (layers intersect, so the first layer's rights are unchanged and only
// the listed files can be executed).
func confine(h helperRules) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if !h.execLayerOnly {
		pins := &pinned{}
		defer pins.close()
		for _, ps := range []*[]string{&h.ro, &h.rw, &h.roFiles, &h.rwFiles, &h.readDirs} {
			if err := pins.pin(ps, h.beneath); err != nil {
				return err
			}
		}
		rules := []landlock.Rule{
			landlock.RODirs(h.ro...).IgnoreIfMissing(),
			landlock.RWDirs(h.rw...),
			landlock.ROFiles(h.roFiles...).IgnoreIfMissing(),
			landlock.RWFiles(h.rwFiles...).IgnoreIfMissing(),
			landlock.PathAccess(landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_READ_DIR), h.readDirs...),
		}
		// Strict about the file system (ABI 1 is enough for it); best effort
		// for what newer kernels add (TCP, IPC scopes): seccomp covers sockets.
		if err := landlock.V7.BestEffort().Restrict(rules...); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if h.limitExec {
		if err := limitExec(h.exec); err != nil {
			return err
		}
	}
	if h.execLayerOnly {
		// bwrap loaded the filter already (sandboxFilter).
		return nil
	}
	return installFilter(sandboxFilter(filterRules{noAnonymousExec: h.limitExec}))
}

// limitExec adds the execute layer: only files may be executed. The
// execute right is in every Landlock ABI, so this layer is never
// downgraded: where it cannot apply, the helper fails and nothing runs.
func limitExec(files []string) error {
	cfg, err := landlock.NewConfig(landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_EXECUTE))
	if err != nil {
		return fmt.Errorf("landlock execute layer: %w", err)
	}
	// A file the sandbox does not show cannot be executed there anyway.
	rule := landlock.PathAccess(landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_EXECUTE), files...).IgnoreIfMissing()
	if err := cfg.RestrictPaths(rule); err != nil {
		return fmt.Errorf("landlock execute layer: %w", err)
	}
	return nil
}

// landlockRules computes what the confined process may touch: system
// directories read-only; each mount (or each visible part of a narrowed
// one) read-only or read-write, except the paths to hide, which get no
// access at all, and the mount's read-only paths, which get read access
// only (Landlock rights are inherited by a whole tree and add up, so both
// are carved out by granting their siblings).
//
// With view (the execute limit), the system directories are narrowed to
// it: the programs the script may run, their loaders and libraries, and
// what its runtime reads, each by a rule of its own.
func landlockRules(spec Spec, bin, tmp string, view *execView) helperRules {
	h := helperRules{uid: -1, ro: []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", filepath.Dir(bin)}}
	if view != nil {
		h.ro = slices.Clone(view.dirs)
		h.roFiles = slices.Clone(view.files)
	}
	for _, e := range etcAllowed {
		p := "/etc/" + e
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			h.ro = append(h.ro, p)
		} else {
			h.roFiles = append(h.roFiles, p)
		}
	}
	// Not /dev/tty: a script has no business with the operator's terminal.
	h.rwFiles = []string{"/dev/null", "/dev/zero", "/dev/full"}
	h.roFiles = append(h.roFiles, "/dev/urandom", "/dev/random")
	h.rw = []string{tmp}
	ro := access{dirs: &h.ro, files: &h.roFiles, readDirs: &h.readDirs}
	rw := access{dirs: &h.rw, files: &h.rwFiles, readDirs: &h.readDirs}
	for _, m := range spec.Mounts {
		h.beneath = append(h.beneath, m.Host)
		var readOnly []string
		for _, r := range m.ReadOnly {
			if part, ok := m.visibleAt(r); ok && part.Writable {
				readOnly = append(readOnly, under(m.Host, r))
			}
		}
		holes := append(slices.Clone(spec.HideHost), readOnly...)
		for _, part := range m.parts() {
			p := under(m.Host, part.Rel)
			if part.Writable {
				rw.carve(p, holes)
			} else {
				ro.carve(p, spec.HideHost)
				if !m.insideWritable(part.Rel) {
					h.keepModes = append(h.keepModes, p)
				}
			}
		}
		for _, p := range readOnly {
			ro.carve(p, spec.HideHost)
		}
		h.keepModes = append(h.keepModes, readOnly...)
	}
	return h
}

// insideWritable reports whether rel lies in a writable part of m, where
// its modes are the script's to change (Landlock rights add up).
func (m Mount) insideWritable(rel string) bool {
	for _, part := range m.parts() {
		if part.Writable && (part.Rel == "." || rel == part.Rel || strings.HasPrefix(rel, part.Rel+"/")) {
			return true
		}
	}
	return false
}

// access is one kind of grant being collected: rules for whole trees,
// for single files, and the listing right alone for carved directories.
type access struct{ dirs, files, readDirs *[]string }

// carve grants p (a directory tree or a file) except the holes inside it.
// Entries that are neither directories nor regular files (links, sockets)
// get no rule of their own.
func (a access) carve(p string, holes []string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	var inside []string
	for _, h := range holes {
		if h == p {
			return
		}
		if strings.HasPrefix(h, p+"/") {
			inside = append(inside, h)
		}
	}
	switch {
	case fi.Mode().IsRegular():
		*a.files = append(*a.files, p)
		return
	case !fi.IsDir():
		return
	case len(inside) == 0:
		*a.dirs = append(*a.dirs, p)
		return
	}
	*a.readDirs = append(*a.readDirs, p)
	entries, err := os.ReadDir(p)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() || e.Type().IsRegular() {
			a.carve(filepath.Join(p, e.Name()), inside)
		}
	}
}

// LandlockABI is the Landlock ABI version the kernel offers (0: none).
func LandlockABI() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno != 0 {
		return 0
	}
	return int(abi)
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
	probe := helperRules{uid: -1, ro: []string{"/usr", "/bin", "/lib", "/lib64"}, rwFiles: []string{"/dev/null"}}
	out, err := execOutput(probe.args(helper, []string{"/bin/true"}))
	if err != nil {
		return fmt.Errorf("landlock helper: %v: %s", err, strings.TrimSpace(out))
	}
	return nil
}

// goRace is the race detector's environment variable. A helper's GORACE
// is harness's own, never the script's; the script's is handed to the
// helper as --script-gorace and is the only one the script sees.
const goRace = "GORACE"

func isGoRace(kv string) bool { return strings.HasPrefix(kv, goRace+"=") }

func withoutGoRace(env []string) []string { return slices.DeleteFunc(slices.Clone(env), isGoRace) }

// splitGoRace takes the script's GORACE out of env for the helper's
// --script-gorace: the last, as exec would keep it.
func splitGoRace(env []string) (rest []string, value string, ok bool) {
	for _, kv := range env {
		if isGoRace(kv) {
			value, ok = kv[len(goRace)+1:], true
		}
	}
	return withoutGoRace(env), value, ok
}
