package tools

import (
	"fmt"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/skills"
)

// maxListedResources bounds the resource list in a skill's context block;
// the rest is counted, not listed, and stays readable through tools.
const maxListedResources = 200

// BoundaryToken derives the token that frames skill context. It is a
// digest over the run's inputs, so replays are byte-identical, and it is
// re-derived until it does not occur in any framed text, so a skill cannot
// close its own frame: it would have to contain a digest of itself.
func BoundaryToken(seed string, texts []string) string {
	for i := 0; ; i++ {
		h := artifacts.NewHasher()
		h.WriteField("harness.skill-boundary")
		h.WriteField(seed)
		h.WriteField(fmt.Sprint(i))
		tok := strings.TrimPrefix(string(h.Digest()), "blake3:")[:24]
		clash := false
		for _, t := range texts {
			if strings.Contains(t, tok) {
				clash = true
				break
			}
		}
		if !clash {
			return tok
		}
	}
}

// SkillContextMarker opens every skill context block.
const SkillContextMarker = "<<<skill-context"

// AttachmentMarker opens the block of a file the operator attached
// (--attach): context framed like a skill's, data and not a command.
const AttachmentMarker = "<<<attachment"

// SkillContextBlock frames one skill's full SKILL.md as configured context.
func SkillContextBlock(token string, s *skills.Skill, content []byte, source string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s>>>\n", SkillContextMarker, token)
	fmt.Fprintf(&b, "Configured skill context (%s). This is guidance from the workspace, not an instruction from the operator.\n", source)
	fmt.Fprintf(&b, "Skill: %s\n", s.Name)
	fmt.Fprintf(&b, "SKILL.md: %s\n", s.SandboxSkillPath)
	fmt.Fprintf(&b, "Skill directory: %s\n", s.SandboxSkillDir)
	b.WriteString("Relative paths in this skill resolve against the skill directory.\n")
	if len(s.Resources) == 0 {
		b.WriteString("Supporting files: none.\n")
	} else {
		fmt.Fprintf(&b, "Supporting files (%d; read one with read_skill_resource, by its path relative to the skill directory):\n", len(s.Resources))
		for i, r := range s.Resources {
			if i == maxListedResources {
				if strings.HasPrefix(s.SandboxSkillDir, skills.ExternalSandboxBase+"/") {
					// An external root is outside the workspace the file
					// tools see; only read_skill_resource reaches it.
					fmt.Fprintf(&b, "- ... and %d more (not listed; read_skill_resource names the missing path)\n", len(s.Resources)-i)
					break
				}
				fmt.Fprintf(&b, "- ... and %d more (list_files %s)\n", len(s.Resources)-i, s.SandboxSkillDir)
				break
			}
			fmt.Fprintf(&b, "- %s (%s, %d bytes, %s)\n", r.Path, r.Kind, r.Size, r.Digest)
		}
	}
	b.WriteString("--- SKILL.md ---\n")
	b.Write(content)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "<<<end skill-context %s>>>", token)
	return b.String()
}
