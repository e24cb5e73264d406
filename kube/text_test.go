package kube

import "testing"

func TestCheckText(t *testing.T) {
	for _, bad := range []string{"a\rb", "a\x00", "\x1b[31m", "a\x7f", "a\vb", "a\fb", "a\tb", "\xff", "a\u2028b", "a\u2029b", "a\u0085b"} {
		if CheckText(bad, true) == nil {
			t.Errorf("CheckText(%q) accepted it", bad)
		}
	}
	if CheckText("a\nb", false) == nil {
		t.Error("a newline passed where none may be")
	}
	for _, ok := range []string{"", "plain", "línea\nzwei", "$(X) {{ '\"#: -"} {
		if err := CheckText(ok, true); err != nil {
			t.Errorf("CheckText(%q) = %v", ok, err)
		}
	}
}
