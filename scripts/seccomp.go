package scripts

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter every sandbox loads: bwrap reads it from a file
// descriptor (--seccomp), the Landlock helper and the egress forwarder's
// child install it.

// filterRules say what the filter refuses besides its fixed part.
type filterRules struct {
	// allowFamilies are the socket families socket() may make (none:
	// every socket is refused).
	allowFamilies []uint32
	// noAnonymousExec refuses what runs a program that has no path the
	// execute limit governs: memfd_create without MFD_NOEXEC_SEAL (a
	// memfd is executable unless sealed so; run through /proc/self/fd
	// or execveat), memfd_secret, and execveat on a descriptor
	// (AT_EMPTY_PATH). glibc's fexecve is that execveat.
	noAnonymousExec bool
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

// sandboxFilter is the classic BPF program: every call from another
// architecture kills the process, as does an x32 system call (numbers
// with bit 30, which the checks below would not see); socket() fails with
// EACCES unless its family is allowed, and io_uring (which can open
// sockets too) always does. AF_UNIX is refused too: Landlock does not
// govern connecting to a socket file, and a host socket (docker.sock, the
// D-Bus bus) is a way out of the sandbox. socketpair() stays allowed: an
// unnamed pair reaches nothing outside.
func sandboxFilter(r filterRules) []unix.SockFilter {
	const (
		auditArchX86_64 = 0xc000003e
		x32SyscallBit   = 0x40000000
		retAllow        = 0x7fff0000
		retErrno        = 0x00050000
		retKill         = 0x80000000
		argOffset       = 16 // seccomp_data.args[0], low half on little-endian
		mfdNoexecSeal   = 0x0008
		atEmptyPath     = unix.AT_EMPTY_PATH
	)
	arg := func(i uint32) uint32 { return argOffset + 8*i }
	eacces := uint32(retErrno | uint32(unix.EACCES))
	ld := func(k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: k}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	jset := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	prog := []unix.SockFilter{
		ld(4), // arch
		jeq(auditArchX86_64, 1, 0),
		ret(retKill),
		ld(0), // syscall number
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32SyscallBit, Jt: 0, Jf: 1},
		ret(retKill),
		jeq(unix.SYS_IO_URING_SETUP, 0, 1),
		ret(eacces),
	}
	if r.noAnonymousExec {
		// Each block ends in a return, so the number need not be
		// loaded again after an argument was.
		prog = append(prog,
			jeq(unix.SYS_MEMFD_CREATE, 0, 4),
			ld(arg(1)), // flags
			jset(mfdNoexecSeal, 0, 1),
			ret(retAllow),
			ret(eacces),
			jeq(unix.SYS_MEMFD_SECRET, 0, 1),
			ret(eacces),
			jeq(unix.SYS_EXECVEAT, 0, 4),
			ld(arg(4)), // flags
			jset(atEmptyPath, 0, 1),
			ret(eacces),
			ret(retAllow),
		)
	}
	n := uint8(len(r.allowFamilies))
	// Not socket(): on to the final allow, past the family checks.
	prog = append(prog, jeq(unix.SYS_SOCKET, 0, n+2), ld(arg(0)))
	for i, f := range r.allowFamilies {
		prog = append(prog, jeq(f, n-uint8(i), 0))
	}
	return append(prog, ret(eacces), ret(retAllow))
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
