package scripts

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// EgressArg is the hidden first argument that makes the harness binary
// the network forwarder inside a networked sandbox. bwrap's network
// namespace has only loopback; programs there speak to an HTTP proxy on
// 127.0.0.1 (HTTP_PROXY, HTTPS_PROXY), and the forwarder relays each
// connection to harness's egress proxy through the Unix socket bound into
// the sandbox. The forwarder is the only process there allowed Unix
// sockets: it starts the script through itself again (egressChildArg),
// which takes them away before exec.
const EgressArg = "__harness-egress"

const egressChildArg = "--child"

// egressNoexecArg asks the forwarder, the first process in a sandbox
// whose programs are limited, to make every mount noexec but those given
// with egressExecMountArg, then give up its capabilities (noexecMounts).
const (
	egressNoexecArg    = "--noexec"
	egressExecMountArg = "--exec-mount"
)

// Where the forwarder's parts are inside the sandbox.
const (
	sandboxEgressSocket = "/run/harness/egress.sock"
	sandboxHelper       = "/run/harness/helper"
	// EgressProxyAddr is the proxy address a networked script is given.
	EgressProxyAddr = "127.0.0.1:3128"
)

// egressEnv points the usual clients (curl, wget, Python, Go, Deno, and
// Node with NODE_USE_ENV_PROXY) at the forwarder.
func egressEnv() []string {
	u := "http://" + EgressProxyAddr
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"ALL_PROXY=" + u, "all_proxy=" + u, "NO_PROXY=", "no_proxy=", "NODE_USE_ENV_PROXY=1"}
}

// IsHelper reports whether args (os.Args) start one of the helpers
// HelperDispatch runs.
func IsHelper(args []string) bool {
	return len(args) >= 2 && (args[1] == HelperArg || args[1] == EgressArg)
}

// HelperDispatch runs the harness binary as one of its sandbox helpers
// when args (os.Args) ask for one; ok is false otherwise.

func HelperDispatch(args []string) (code int, ok bool) {
	if len(args) < 2 {
		return 0, false
	}
	switch args[1] {
	case HelperArg:
		return HelperMain(args[2:]), true
	case EgressArg:
		return EgressMain(args[2:]), true
	}
	return 0, false
}

// EgressMain is the forwarder's entry point (os.Args after EgressArg):
// "--socket PATH --listen ADDR -- argv..." forwards and runs argv as its
// child; "--child -- argv..." confines itself to IP sockets and execs argv.
func EgressMain(args []string) int {
	var sock, listen string
	var noexec bool
	var execMounts []string
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		switch {
		case args[i] == egressChildArg:
			if i+2 >= len(args) || args[i+1] != "--" {
				fmt.Fprintln(os.Stderr, "harness egress: no command")
				return 2
			}
			return execConfined(args[i+2:])
		case args[i] == "--socket" && i+1 < len(args):
			sock = args[i+1]
			i++
		case args[i] == "--listen" && i+1 < len(args):
			listen = args[i+1]
			i++
		case args[i] == egressNoexecArg:
			noexec = true
		case args[i] == egressExecMountArg && i+1 < len(args):
			execMounts = append(execMounts, args[i+1])
			i++
		default:
			fmt.Fprintf(os.Stderr, "harness egress: bad argument %q\n", args[i])
			return 2
		}
	}
	if sock == "" || listen == "" || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "harness egress: usage: --socket PATH --listen ADDR -- COMMAND...")
		return 2
	}
	if noexec {
		if err := noexecMounts(execMounts); err != nil {
			fmt.Fprintf(os.Stderr, "harness egress: %v\n", err)
			return 126
		}
		if err := dropPrivileges(-1); err != nil {
			fmt.Fprintf(os.Stderr, "harness egress: %v\n", err)
			return 126
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness egress: %v\n", err)
		return 126
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, sock)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	cmd := exec.Command(self, append([]string{EgressArg, egressChildArg, "--"}, args[i+1:]...)...)
	cmd.Args[0] = args[i+1]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "harness egress: %v\n", err)
		return 127
	}
	return passExit(cmd.Wait())
}

// relay carries one connection from the sandbox to the egress proxy.
func relay(c net.Conn, sock string) {
	up, err := net.Dial("unix", sock)
	if err != nil {
		c.Close()
		return
	}
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go half(up, c)
	go half(c, up)
	<-done
	<-done
	c.Close()
	up.Close()
}

// execConfined replaces this process with argv, allowed IPv4 and IPv6
// sockets only: the only listener it can reach is the forwarder, and a
// Unix socket (a host service bound into the workspace) stays out of
// reach as in every other sandbox.
func execConfined(argv []string) int {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "harness egress: no_new_privs: %v\n", err)
		return 126
	}
	if err := installFilter(sandboxFilter(filterRules{allowFamilies: []uint32{unix.AF_INET, unix.AF_INET6}})); err != nil {
		fmt.Fprintf(os.Stderr, "harness egress: %v\n", err)
		return 126
	}
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness egress: %v\n", err)
		return 127
	}
	err = syscall.Exec(bin, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "harness egress: exec %s: %v\n", argv[0], err)
	return 127
}
