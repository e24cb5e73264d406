package scripts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The bwrap backend: probing it, and the command line that confines one
// execution (namespaces, mounts, the seccomp socket filter, and for a
// networked skill the egress forwarder).

func probeBwrap(ctx context.Context) error {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return errors.New("bwrap is not installed (Debian: apt-get install bubblewrap)")
	}
	args := append(append(bwrapBase(nil), etcBinds()...), "--", "/bin/true")
	out, err := exec.CommandContext(ctx, bw, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bwrap cannot start a sandbox: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// etcAllowed is all of /etc a script sees: what the dynamic loader, name
// lookups, TLS roots, time zones and Debian's alternatives links need, and
// nothing that holds a secret (shadow, gshadow, ssh host keys, sudoers).
// git's system configuration is there too: under Landlock a file that
// exists but may not be read stops git (a missing one does not).
var etcAllowed = []string{
	"alternatives", "ca-certificates", "ca-certificates.conf", "gai.conf", "gitconfig", "group", "host.conf", "hosts",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf", "os-release",
	"passwd", "protocols", "resolv.conf", "services", "ssl", "timezone",
}

// bwrapBase confines everything: new user (unprivileged uid and gid, no
// capabilities), pid, network, ipc and uts namespaces; read-only system
// directories (all of /usr, or only view when the script's programs are
// limited); private /tmp and /proc; the sandbox dies with harness and
// cannot reach its terminal. The curated /etc comes after it (etcBinds,
// etcArgs).
func bwrapBase(view *execView) []string {
	args := []string{
		"--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL",
		"--die-with-parent", "--new-session",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
	}
	if view == nil {
		args = append(args, "--ro-bind", "/usr", "/usr")
	} else {
		// After /tmp: a program may live there (a skill's staged copy).
		args = append(args, view.bwrapArgs()...)
	}
	for _, d := range []string{"bin", "sbin", "lib", "lib64", "lib32"} {
		if t, err := os.Readlink("/" + d); err == nil {
			args = append(args, "--symlink", t, "/"+d)
		} else if fi, err := os.Stat("/" + d); err == nil && fi.IsDir() {
			args = append(args, "--ro-bind", "/"+d, "/"+d)
		}
	}
	return args
}

// etcBinds shows the curated /etc by binding each entry read-only.
func etcBinds() []string {
	var args []string
	for _, e := range etcAllowed {
		args = append(args, "--ro-bind-try", "/etc/"+e, "/etc/"+e)
	}
	return args
}

// maxEtcCopy is the largest /etc file etcArgs copies rather than binds.
const maxEtcCopy = 1 << 20

// etcArgs shows the curated /etc: a file every user may read is copied
// into the sandbox's root (bwrap --file from a descriptor opened here),
// which bwrapSeal makes read-only; directories, and files only some users
// may read, are bound read-only as etcBinds does. A bind is a mount, and
// bwrap reads the whole mount table again after each one: binding the 16
// files of a Debian /etc one by one cost a call about 5 ms of CPU on the
// reference machine, copying them a fraction of a millisecond. A copy is
// the file as it was when the call started.
func (p *prepared) etcArgs() []string {
	var args []string
	for _, e := range etcAllowed {
		name := "/etc/" + e
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var fi os.FileInfo
		if err == nil {
			fi, err = f.Stat()
		}
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o004 == 0 || fi.Size() > maxEtcCopy {
			if f != nil {
				f.Close()
			}
			// Whoever may read it reads it through the bind, with the
			// host's permissions.
			args = append(args, "--ro-bind-try", name, name)
			continue
		}
		p.undo = append(p.undo, func() { f.Close() })
		args = append(args, "--perms", fmt.Sprintf("%04o", fi.Mode().Perm()), "--file", strconv.Itoa(3+len(p.extra)), name)
		p.extra = append(p.extra, f)
	}
	return args
}

// bwrapSeal makes the sandbox's own root (a tmpfs holding the mount
// points) read-only once everything is mounted: a script cannot create
// files next to /etc or /usr, only in /tmp and the workspace.
func bwrapSeal() []string {
	return []string{"--remount-ro", "/"}
}

// bwrapArgv is the bwrap command line for inner (the runtime and its
// arguments) under spec; it may change p's environment and extra files.
func (p *prepared) bwrapArgv(spec Spec, bin string, inner []string) ([]string, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, &Refusal{Code: "sandbox_unavailable", Msg: "bwrap is not installed"}
	}
	// The helper (the execute layer, the network forwarder) is the
	// harness binary: with the view narrowed, the libraries it loads
	// must be in it too.
	helper := ""
	if spec.LimitExec || spec.Egress != "" {
		if helper, err = p.helperPath(spec); err != nil {
			return nil, err
		}
	}
	var view *execView
	if spec.LimitExec {
		// The helper as given, not a per-call copy of it: its libraries
		// are the same, and the view stays cached.
		view = viewFor(bin, spec.Exec, spec.Path, spec.Helper)
	}
	argv := append(append([]string{bw}, bwrapBase(view)...), p.etcArgs()...)
	if view == nil && !strings.HasPrefix(bin, "/usr/") {
		argv = append(argv, "--ro-bind", bin, bin)
	}
	var seal []string
	for _, m := range spec.Mounts {
		mount, err := p.bwrapMount(m)
		if err != nil {
			return nil, err
		}
		argv = append(argv, mount...)
		if m.Only != nil && !slices.ContainsFunc(m.Only, func(p Part) bool { return p.Rel == "." }) {
			// The empty directory under the parts; sealed once every
			// mount point in it is made.
			seal = append(seal, "--remount-ro", m.Sandbox)
		}
	}
	for _, h := range spec.Hide {
		if shown(spec.Mounts, h) {
			argv = append(argv, "--tmpfs", h, "--remount-ro", h)
		}
	}
	argv = append(argv, seal...)
	helperBound := false
	bindHelper := func() {
		if !helperBound {
			argv = append(argv, "--ro-bind", helper, sandboxHelper)
			helperBound = true
		}
	}
	if spec.LimitExec {
		// The execute layer runs inside the sandbox, so its paths are
		// the sandbox's: the view shows each file where it is on the
		// host.
		bindHelper()
		h := helperRules{uid: -1, execLayerOnly: true, limitExec: true, exec: view.exec}
		// The script's GORACE goes past the helper, not through its
		// environment (see goRace).
		p.env, h.scriptGoRace, h.hasScriptGoRace = splitGoRace(p.env)
		if spec.ExecTemp {
			h.exec = append(slices.Clone(h.exec), "/tmp")
		}
		if spec.Egress == "" {
			// Its own mount too: once it has made the mounts noexec it
			// only execs the script, and the loader must not be able to
			// run it (or the harness binary it may be) for the script.
			h.noexec, h.execMounts = true, view.mounts(spec.ExecTemp, false)
		}
		inner = h.args(sandboxHelper, inner)
		// The first process in the sandbox (this helper, or the network
		// forwarder before it) makes every mount but the view's noexec,
		// which needs CAP_SYS_ADMIN in the sandbox's user namespace; it
		// gives up every capability before anything of the script runs.
		argv = append(argv, "--cap-add", "CAP_SYS_ADMIN")
	}
	// The same socket filter as under Landlock: with the network
	// unshared only Unix sockets are left, and a socket file in the
	// workspace would still lead to a host service. A networked
	// sandbox lets the forwarder have Unix and IP sockets; it takes
	// the Unix ones away from the script (EgressMain).
	var families []uint32
	if spec.Egress != "" {
		bindHelper()
		argv = append(argv, "--ro-bind", spec.Egress, sandboxEgressSocket)
		fwd := []string{sandboxHelper, EgressArg, "--socket", sandboxEgressSocket, "--listen", EgressProxyAddr}
		if spec.LimitExec {
			fwd = append(fwd, egressNoexecArg)
			// The forwarder starts itself again, then the execute
			// layer: the helper's mount stays exec.
			for _, m := range view.mounts(spec.ExecTemp, true) {
				fwd = append(fwd, egressExecMountArg, m)
			}
		}
		inner = append(append(fwd, "--"), inner...)
		p.env = append(slices.Clone(spec.Env), egressEnv()...)
		families = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}
	}
	argv = append(argv, bwrapSeal()...)
	filter, err := filterFile(filterRules{allowFamilies: families, noAnonymousExec: spec.LimitExec})
	if err != nil {
		return nil, err
	}
	p.undo = append(p.undo, func() { filter.Close() })
	argv = append(argv, "--seccomp", strconv.Itoa(3+len(p.extra)))
	p.extra = append(p.extra, filter)
	argv = append(argv, "--chdir", spec.Cwd, "--")
	argv = append(argv, inner...)
	p.launch = p.drop
	return argv, nil
}

// bwrapMount binds m: the whole mount, or an empty read-only directory
// with only its parts bound on it; then its read-only paths over any
// writable part that shows them. Parts and read-only paths are opened
// beneath the mount's host directory without following any link, and
// bound by descriptor: what was checked is what is mounted.
func (p *prepared) bwrapMount(m Mount) ([]string, error) {
	if m.Only == nil && m.ReadOnly == nil {
		op := "--ro-bind"
		if m.Writable {
			op = "--bind"
		}
		return []string{op, m.Host, m.Sandbox}, nil
	}
	var argv []string
	bind := func(rel string, writable bool) error {
		f, err := openBeneath(m.Host, rel)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil // nothing there to show
		case err != nil:
			return &Refusal{Code: "view_path_invalid", Msg: fmt.Sprintf("%s cannot be shown to the sandbox: %v; a path a skill is granted must be a directory or file of the workspace reached without symbolic links", path.Join(m.Sandbox, rel), err)}
		}
		op := "--ro-bind-fd"
		if writable {
			op = "--bind-fd"
		}
		argv = append(argv, op, strconv.Itoa(3+len(p.extra)), path.Join(m.Sandbox, rel))
		p.extra = append(p.extra, f)
		p.undo = append(p.undo, func() { f.Close() })
		return nil
	}
	if m.Only != nil {
		argv = append(argv, "--tmpfs", m.Sandbox)
	}
	for _, part := range m.parts() {
		if err := bind(part.Rel, part.Writable); err != nil {
			return nil, err
		}
	}
	for _, r := range m.ReadOnly {
		if part, ok := m.visibleAt(r); !ok || !part.Writable {
			continue
		}
		// A link is not bound over; the caller protects what a link
		// leads to by its own name.
		if fi, err := os.Lstat(under(m.Host, r)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := bind(r, false); err != nil {
			return nil, err
		}
	}
	return argv, nil
}

// openBeneath opens rel below base as a path descriptor, refusing any
// symbolic link on the way (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS).
func openBeneath(base, rel string) (*os.File, error) {
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: base, Err: err}
	}
	defer unix.Close(dir)
	if rel == "." {
		fd, err := unix.Dup(dir)
		if err != nil {
			return nil, err
		}
		unix.CloseOnExec(fd)
		return os.NewFile(uintptr(fd), base), nil
	}
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == unix.ELOOP || err == unix.EXDEV:
		return nil, fmt.Errorf("it is, or passes through, a symbolic link")
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), under(base, rel)), nil
}

// shown reports whether the sandbox path p is in the view: a narrowed
// mount shows only its parts (a hidden path outside them needs no cover).
func shown(mounts []Mount, p string) bool {
	for _, m := range mounts {
		if m.Only == nil {
			continue
		}
		rel, ok := strings.CutPrefix(p, strings.TrimSuffix(m.Sandbox, "/")+"/")
		if p == m.Sandbox {
			rel, ok = ".", true
		}
		if ok {
			_, vis := m.visibleAt(rel)
			return vis
		}
	}
	return true
}

// helperPath is the harness binary where the sandbox user can read it, to
// be bound into the sandbox (the egress forwarder, the execute layer).
func (p *prepared) helperPath(spec Spec) (string, error) {
	if spec.Helper == "" {
		return "", &Refusal{Code: "sandbox_unavailable", Msg: "this sandbox needs the harness binary as its helper (network forwarder, execute limit)"}
	}
	helper := spec.Helper
	if p.drop && reachableByOthers(helper) != nil {
		linked, cleanup, err := reachableCopy(helper)
		if err != nil {
			return "", &Refusal{Code: "sandbox_unavailable", Msg: fmt.Sprintf("the unprivileged sandbox user cannot reach the harness binary %s to forward its network: %v", helper, err)}
		}
		p.undo = append(p.undo, cleanup)
		helper = linked
	}
	return helper, nil
}

// filterFile holds the encoded seccomp filter for bwrap to read.
func filterFile(rules filterRules) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(encodeFilter(sandboxFilter(rules)))
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// mounts are the mount points of the view in a bwrap sandbox, with temp
// the private /tmp, with helper the helper: the only mounts whose files
// may be executed or mapped executable.
func (v *execView) mounts(temp, helper bool) []string {
	out := append(slices.Clone(v.dirs), v.files...)
	if temp {
		out = append(out, "/tmp")
	}
	if helper {
		out = append(out, sandboxHelper)
	}
	return out
}

// bwrapArgs shows the view: each directory and file bound read-only where
// it is on the host, then the links that lead to them (bwrap makes the
// directories each needs on the sandbox's own root, sealed read-only
// later).
func (v *execView) bwrapArgs() []string {
	args := make([]string, 0, 3*(len(v.dirs)+len(v.files)+len(v.links)))
	for _, d := range v.dirs {
		args = append(args, "--ro-bind", d, d)
	}
	for _, f := range v.files {
		args = append(args, "--ro-bind", f, f)
	}
	for _, l := range v.links {
		args = append(args, "--symlink", l.target, l.path)
	}
	return args
}
