package egress

import (
	"context"
	"net"
	"net/netip"
	"testing"
)

// A declared and allowed name whose DNS answer is one of this machine's
// own non-loopback addresses (the address of its eth0, a ULA, a bridge)
// reaches a host service listening on all addresses just as 127.0.0.1
// would: it is "an address of the machine", which the proxy promises to
// refuse for any name but localhost or the address itself.
func TestHostsOwnInterfaceAddressRefusedForAnotherName(t *testing.T) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		tried++
		c, err := dialerFor("api.example.com").DialContext(context.Background(), "tcp", net.JoinHostPort(ip.String(), port))
		if err == nil {
			c.Close()
			t.Errorf("a name's answer %s, this machine's own address, connected to a host service listening on all addresses", ip)
		}
	}
	if tried == 0 {
		t.Skip("this machine has no non-loopback address to try")
	}
}
