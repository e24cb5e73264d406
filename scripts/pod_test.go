package scripts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bpfseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	mobyseccomp "github.com/moby/profiles/seccomp"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/testenv"
)

// A pod at the restricted Pod Security level runs under its runtime's
// default seccomp profile (RuntimeDefault), as the image's unprivileged
// user with no capabilities. This measures what harness's sandbox does
// there, under the real default profile the moby project publishes
// (github.com/moby/profiles; containerd's default is drawn from the same
// rules): which backend --sandbox auto finds, and that a script runs
// confined by it.
func TestSandboxUnderRuntimeDefaultSeccomp(t *testing.T) {
	testenv.NeedArch(t, "amd64", "the profile is translated for amd64 here")
	testenv.NeedRoot(t, "it starts the child as the image's user")
	_, err := Probe(context.Background(), BackendLandlock, helper(t))
	testenv.Need(t, "sandbox backend landlock", err)
	// Everything the child touches must be reachable by uid 10001.
	dir := t.TempDir()
	eachAncestor(dir, func(d string) error {
		if strings.HasPrefix(d, os.TempDir()+"/") {
			os.Chmod(d, 0o755)
		}
		return nil
	})
	exe := filepath.Join(dir, "scripts.test")
	if err := copyFile(helper(t), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, filepath.Join(ws, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, podUID, podUID); err != nil {
			t.Fatal(err)
		}
	}
	child := func(profile string) string {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "HARNESS_TEST_POD_CHILD="+profile, "POD_WS="+ws, "POD_OUTSIDE="+outside)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: podUID, Gid: podUID}}
		out, err := cmd.CombinedOutput()
		t.Logf("child under %s seccomp:\n%s", profile, out)
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return string(out)
	}
	// The same user without the profile: bwrap starts here, so it is the
	// profile that refuses it below.
	if out := child("no"); !strings.Contains(out, "auto: bwrap") {
		testenv.Need(t, "bwrap for an unprivileged user", fmt.Errorf("it does not start even without the profile"))
	}
	out := child("runtime-default")
	for _, want := range []string{
		"bwrap: unavailable",     // RuntimeDefault refuses the user namespace
		"auto: landlock",         // so auto takes Landlock
		"script: exit 0 ran",     // which runs the script
		"outside write: refused", // confined to its workspace
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("the script wrote outside its workspace")
	}
}

const podUID = 10001

// podChild runs in the child, as the pod would: the default profile
// loaded, then harness's probe and one script.
func podChild() int {
	if os.Getenv("HARNESS_TEST_POD_CHILD") == "runtime-default" {
		if err := loadDefaultProfile(); err != nil {
			fmt.Println("load profile:", err)
			return 1
		}
	}
	exe, _ := os.Executable()
	ctx := context.Background()
	if _, err := Probe(ctx, BackendBwrap, exe); err != nil {
		fmt.Println("bwrap: unavailable:", err)
	} else {
		fmt.Println("bwrap: available")
	}
	b, err := Probe(ctx, BackendAuto, exe)
	if err != nil {
		fmt.Println("auto: none:", err)
		return 1
	}
	fmt.Println("auto:", b)
	if os.Getenv("HARNESS_TEST_POD_CHILD") == "no" {
		return 0
	}
	ws, outside := os.Getenv("POD_WS"), os.Getenv("POD_OUTSIDE")
	res, err := Run(ctx, b, Spec{
		Argv:    []string{"bash", "-c", "echo ran; echo x > sub/inside; if echo x > " + outside + "/escaped 2>/dev/null; then echo 'outside write: allowed'; else echo 'outside write: refused'; fi"},
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		Path:    os.Getenv("PATH"),
		Cwd:     ws,
		Mounts:  []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}},
		Helper:  exe,
		Timeout: 30 * time.Second,
	})
	if err != nil {
		fmt.Println("script:", err)
		return 1
	}
	fmt.Printf("script: exit %d %s%s\n", res.ExitCode, res.Stdout, res.Stderr)
	return 0
}

// loadDefaultProfile translates moby's default profile for a process
// without capabilities on amd64 and loads it: what is allowed is allowed,
// everything else fails with EPERM (the profile's default).
func loadDefaultProfile() error {
	p := mobyseccomp.DefaultProfile()
	info, err := arch.GetInfo("amd64")
	if err != nil {
		return err
	}
	policy := bpfseccomp.Policy{DefaultAction: bpfseccomp.ActionErrno}
	for _, s := range p.Syscalls {
		if s.Includes != nil && (len(s.Includes.Caps) > 0 || len(s.Includes.Arches) > 0 && !slices.Contains(s.Includes.Arches, "amd64")) {
			continue
		}
		if s.Excludes != nil && slices.Contains(s.Excludes.Arches, "amd64") {
			continue
		}
		action, err := actionOf(string(s.Action), s.ErrnoRet)
		if err != nil {
			return err
		}
		var names []string
		for _, n := range s.Names { // the default profile names every call in Names
			if _, ok := info.SyscallNames[n]; ok {
				names = append(names, n) // others have no number here: denied as by default
			}
		}
		if len(names) == 0 {
			continue
		}
		g := bpfseccomp.SyscallGroup{Action: action}
		if len(s.Args) == 0 {
			g.Names = names
		} else {
			var conds bpfseccomp.ArgumentConditions
			for _, a := range s.Args {
				c := bpfseccomp.Condition{Argument: uint32(a.Index), Value: a.Value}
				switch {
				case a.Op == "SCMP_CMP_MASKED_EQ" && a.ValueTwo == 0:
					c.Operation = bpfseccomp.BitsNotSet
				case a.Op == "SCMP_CMP_EQ":
					c.Operation = bpfseccomp.Equal
				case a.Op == "SCMP_CMP_NE":
					c.Operation = bpfseccomp.NotEqual
				case a.Op == "SCMP_CMP_LT":
					c.Operation = bpfseccomp.LessThan
				case a.Op == "SCMP_CMP_GT":
					c.Operation = bpfseccomp.GreaterThan
				case a.Op == "SCMP_CMP_LE":
					c.Operation = bpfseccomp.LessOrEqual
				case a.Op == "SCMP_CMP_GE":
					c.Operation = bpfseccomp.GreaterOrEqual
				default:
					return fmt.Errorf("%v: comparison %s not translated", names, a.Op)
				}
				conds = append(conds, c)
			}
			for _, n := range names {
				g.NamesWithCondtions = append(g.NamesWithCondtions, bpfseccomp.NameWithConditions{Name: n, Conditions: conds})
			}
		}
		policy.Syscalls = append(policy.Syscalls, g)
	}
	return bpfseccomp.LoadFilter(bpfseccomp.Filter{NoNewPrivs: true, Flag: bpfseccomp.FilterFlagTSync, Policy: policy})
}

func actionOf(a string, errno *uint) (bpfseccomp.Action, error) {
	switch a {
	case "SCMP_ACT_ALLOW":
		return bpfseccomp.ActionAllow, nil
	case "SCMP_ACT_ERRNO":
		if errno != nil {
			return bpfseccomp.Action(unix.SECCOMP_RET_ERRNO | uint32(*errno)), nil
		}
		return bpfseccomp.ActionErrno, nil
	}
	return 0, fmt.Errorf("action %s not translated", a)
}
