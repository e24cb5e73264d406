package outcome

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"read_file", "run_command", "write_file"}
	for _, tc := range []struct{ given, want string }{
		{"write_fle", "write_file"},
		{"wrtie_file", "write_file"},
		{"run_comand", "run_command"},
		{"delete_everything", ""},
		{"write_file", ""}, // the name itself is no misspelling
		{"", ""},
	} {
		t.Run(tc.given, func(t *testing.T) {
			if got := Nearest(tc.given, names); got != tc.want {
				t.Errorf("Nearest(%q) = %q, want %q", tc.given, got, tc.want)
			}
		})
	}
}
