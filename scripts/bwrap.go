package scripts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
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
	if _, err := exec.LookPath("prlimit"); err != nil {
		return errors.New("prlimit (util-linux) is not installed")
	}
	args := append(bwrapBase(), "--", "/bin/true")
	out, err := exec.CommandContext(ctx, bw, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bwrap cannot start a sandbox: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// etcAllowed is all of /etc a script sees: what the dynamic loader, name
// lookups, TLS roots, time zones and Debian's alternatives links need, and
// nothing that holds a secret (shadow, gshadow, ssh host keys, sudoers).
var etcAllowed = []string{
	"alternatives", "ca-certificates", "ca-certificates.conf", "gai.conf", "group", "host.conf", "hosts",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf", "os-release",
	"passwd", "protocols", "resolv.conf", "services", "ssl", "timezone",
}

// bwrapBase confines everything: new user (unprivileged uid and gid, no
// capabilities), pid, network, ipc and uts namespaces; read-only system
// directories and a curated /etc; private /tmp and /proc; the sandbox dies
// with harness and cannot reach its terminal.
func bwrapBase() []string {
	args := []string{
		"--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL",
		"--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
	}
	for _, e := range etcAllowed {
		args = append(args, "--ro-bind-try", "/etc/"+e, "/etc/"+e)
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
	argv := append([]string{bw}, bwrapBase()...)
	if !strings.HasPrefix(bin, "/usr/") {
		argv = append(argv, "--ro-bind", bin, bin)
	}
	var seal []string
	for _, m := range spec.Mounts {
		argv = append(argv, bwrapMount(m)...)
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
	bindHelper := func() error {
		if helperBound {
			return nil
		}
		helper, err := p.helperPath(spec)
		if err != nil {
			return err
		}
		argv = append(argv, "--ro-bind", helper, sandboxHelper)
		helperBound = true
		return nil
	}
	if spec.LimitExec {
		// The execute layer runs inside the sandbox, so its paths are
		// the sandbox's: the runtime and /usr are bound where they are
		// on the host.
		if err := bindHelper(); err != nil {
			return nil, err
		}
		h := helperRules{uid: -1, execLayerOnly: true, limitExec: true, exec: executables(bin, spec.Exec, spec.Path)}
		inner = h.args(sandboxHelper, inner)
	}
	// The same socket filter as under Landlock: with the network
	// unshared only Unix sockets are left, and a socket file in the
	// workspace would still lead to a host service. A networked
	// sandbox lets the forwarder have Unix and IP sockets; it takes
	// the Unix ones away from the script (EgressMain).
	var families []uint32
	if spec.Egress != "" {
		if err := bindHelper(); err != nil {
			return nil, err
		}
		argv = append(argv, "--ro-bind", spec.Egress, sandboxEgressSocket)
		inner = append([]string{sandboxHelper, EgressArg, "--socket", sandboxEgressSocket, "--listen", EgressProxyAddr, "--"}, inner...)
		p.env = append(slices.Clone(spec.Env), egressEnv()...)
		families = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}
	}
	argv = append(argv, bwrapSeal()...)
	filter, err := filterFile(families...)
	if err != nil {
		return nil, err
	}
	p.undo = append(p.undo, func() { filter.Close() })
	p.extra = append(p.extra, filter)
	argv = append(argv, "--seccomp", "3")
	argv = append(argv, "--chdir", spec.Cwd, "--")
	argv = append(argv, inner...)
	if p.drop {
		argv = append(setprivArgs(), argv...)
	}
	return argv, nil
}

// bwrapMount binds m: the whole mount, or an empty read-only directory
// with only its parts bound on it; then its read-only paths over any
// writable part that shows them.
func bwrapMount(m Mount) []string {
	bind := func(writable bool) string {
		if writable {
			return "--bind"
		}
		return "--ro-bind"
	}
	var argv []string
	if m.Only != nil {
		argv = append(argv, "--tmpfs", m.Sandbox)
	}
	for _, part := range m.parts() {
		host := under(m.Host, part.Rel)
		if _, err := os.Lstat(host); err != nil {
			continue // nothing there to show
		}
		argv = append(argv, bind(part.Writable), host, path.Join(m.Sandbox, part.Rel))
	}
	for _, r := range m.ReadOnly {
		part, ok := m.visibleAt(r)
		if !ok || !part.Writable {
			continue
		}
		// A link is not bound over (bwrap would follow it); the caller
		// protects what a link leads to by its own name.
		if fi, err := os.Lstat(under(m.Host, r)); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		argv = append(argv, "--ro-bind", under(m.Host, r), path.Join(m.Sandbox, r))
	}
	return argv
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

// filterFile holds the encoded socket filter for bwrap to read.
func filterFile(allowFamilies ...uint32) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(encodeFilter(socketFilter(allowFamilies...)))
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
