package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
)

// Network gives the scripts and servers of a skill that declares hosts
// an egress proxy as their one way out, which lets through what the
// operator also allowed (--allow-network, possibly nothing); every
// attempt goes to network-log.jsonl. A nil *Network gives no skill any
// network.
type Network struct {
	Allowed []egress.Rule
	RunDir  string
	Redact  *artifacts.Redactor

	mu  sync.Mutex
	log *artifacts.Log // opened at the first attempt
}

// Close closes the log.
func (n *Network) Close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log != nil {
		n.log.Close()
		n.log = nil
	}
}

func (n *Network) append(a record.NetworkAttempt) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log == nil {
		l, err := artifacts.OpenLog(filepath.Join(n.RunDir, record.FileNetworkLog), n.Redact)
		if err != nil {
			return err
		}
		n.log = l
	}
	return n.log.Append(a)
}

// egressFor starts the proxy of one execution of s under backend (source
// names it: script:<path>, mcp:<key>). It returns a nil grant, and no
// socket, when the execution gets no network: the skill declares no
// hosts, or the sandbox is none (the host's network), or it is one
// without a network namespace and the operator allowed nothing, so that
// nothing would pass anyway. stop ends the proxy and its tunnels.
func (n *Network) egressFor(s *skills.Skill, source string, backend scripts.Backend) (sock string, grant *record.NetworkGrant, stop func(), err error) {
	if n == nil || backend == scripts.BackendNone || backend != scripts.BackendBwrap && len(n.Allowed) == 0 {
		return "", nil, func() {}, nil
	}
	perms, err := skills.PermissionsOf(s.Frontmatter)
	if err != nil {
		return "", nil, nil, &scripts.Refusal{Code: "skill_permissions_invalid", Msg: fmt.Sprintf("skill %s: %v", s.Name, err)}
	}
	if perms == nil || len(perms.Network) == 0 {
		return "", nil, func() {}, nil
	}
	declared, err := egress.ParseRules(perms.Network)
	if err != nil {
		return "", nil, nil, &scripts.Refusal{Code: "skill_permissions_invalid", Msg: fmt.Sprintf("skill %s: metadata.harness.permissions.network: %v", s.Name, err)}
	}
	// A directory others may pass through but not list: the sandbox user
	// connects by the exact path.
	dir, err := scripts.MkdirReachable("harness-egress-")
	if err != nil {
		return "", nil, nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	sock = filepath.Join(dir, "egress.sock")
	proxy, err := egress.Listen(sock, egress.Policy{Declared: declared, Allowed: n.Allowed}, func(a egress.Attempt) error {
		return n.append(record.NetworkAttempt{
			Envelope: artifacts.NewEnvelope(record.TypeNetworkAttempt, record.Version),
			Time:     a.Time.UTC(), Skill: s.Name, Source: source,
			Method: a.Method, Host: a.Host, Port: a.Port, Allowed: a.Allowed, Reason: a.Reason, Error: a.Error,
		})
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	grant = &record.NetworkGrant{Declared: rulesText(declared), Allowed: rulesText(n.Allowed), Log: record.FileNetworkLog}
	return sock, grant, func() { proxy.Close(); os.RemoveAll(dir) }, nil
}

func rulesText(rs []egress.Rule) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}
