package egress

import "testing"

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" = refused
	}{
		{"example.com", "example.com"},
		{"Example.COM.", "example.com"},
		{"example.com:443", "example.com:443"},
		{"localhost:8080", "localhost:8080"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1:80", "127.0.0.1:80"},
		{"[::1]:443", "[::1]:443"},
		{"[::0001]", "::1"},
		{"::1", "::1"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"xn--p1ai", "xn--p1ai"},
		{"", ""},
		{"http://example.com", ""},
		{"example.com/path", ""},
		{"user@example.com", ""},
		{"*.example.com", ""},
		{"example.com:0", ""},
		{"example.com:65536", ""},
		{"example.com:http", ""},
		{"-bad.com", ""},
		{"a..b", ""},
		{"127.1", ""},
		{"0x7f.1", ""},
		{"2130706433", ""},
		{"fe80::1%eth0", ""},
		{"exa mple.com", ""},
	} {
		r, err := ParseRule(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseRule(%q) = %v, want an error", tc.in, r)
			}
			continue
		}
		if err != nil || r.String() != tc.want {
			t.Errorf("ParseRule(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	rules := func(s ...string) []Rule {
		r, err := ParseRules(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	p := Policy{Declared: rules("api.example.com", "localhost:8080", "10.0.0.1:22"), Allowed: rules("api.example.com:443", "localhost", "10.0.0.1")}
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"api.example.com", 443, "allowed"},
		{"API.Example.com.", 443, "allowed"},
		{"api.example.com", 80, "not_allowed"}, // the skill said any port, the operator 443
		{"localhost", 8080, "allowed"},
		{"localhost", 8081, "not_declared"},
		{"127.0.0.1", 8080, "not_declared"}, // by address, not by name
		{"10.0.0.1", 22, "allowed"},
		{"::ffff:10.0.0.1", 22, "allowed"},
		{"evil.example.com", 443, "not_declared"},
		{"example.com", 443, "not_declared"},
		{"127.1", 8080, "not_a_host"},
		{"localhost", 0, "bad_port"},
	} {
		ok, why := p.Decide(tc.host, tc.port)
		if why != tc.want || ok != (tc.want == "allowed") {
			t.Errorf("Decide(%s, %d) = %v %s, want %s", tc.host, tc.port, ok, why, tc.want)
		}
	}
	if ok, why := (Policy{Declared: rules("localhost")}).Decide("localhost", 1); ok || why != "not_allowed" {
		t.Errorf("no operator entries: %v %s", ok, why)
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com", "a:1", "[::1]:2", "1.2.3.4", "x..y", "[", "]:", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		// What was accepted reads back as itself.
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("%q -> %v -> %v, %v", s, r, again, err)
		}
		if ok, _ := (Policy{Declared: []Rule{r}, Allowed: []Rule{r}}).Decide(r.Host, max(r.Port, 1)); !ok {
			t.Fatalf("%v does not allow itself", r)
		}
	})
}
