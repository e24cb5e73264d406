package kube

import "strings"

// Literal is s written so that a container's command, args or env value
// receive it as it is. Kubernetes expands $(NAME) there to the container's variable
// of that name (HARNESS_API_KEY among them) and reads $$ as one $; every
// $ doubled expands to the text given, whatever follows it.
func Literal(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// Argv is each word of a command or args as Literal writes it: what every
// container harness prints runs.
func Argv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = Literal(a)
	}
	return out
}

// Expand is what Kubernetes makes of one word of a container's command or
// args given the container's variables: $(NAME) of a variable it has is
// its value, $$ is $, anything else stays as written. The tests of every
// generator run what they print through it.
func Expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
