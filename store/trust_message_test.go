package store

import "testing"

// The prefix a refusal suggests trusts the source and its siblings, and
// carries no credentials.
func TestParentURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/acme/skills.git", "https://github.com/acme/"},
		{"https://user:secret@git.example/team/x/skills.git", "https://git.example/team/x/"},
		{"file:///srv/git/skills.git", "file:///srv/git/"},
		{"ssh://git@host:2222/acme/skills.git", "ssh://host:2222/acme/"},
		{"https://git.example/skills.git", "https://git.example/"},
	} {
		if got := parentURL(tc.in); got != tc.want {
			t.Errorf("parentURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
