package skills

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// The registry is written as encoding/json writes it (indented, HTML not
// escaped), byte for byte, but its resources are written here: a root of
// 2,000 skills has 40,000 of them, and encoding/json's indenting pass over
// its own output was a third of a warm snapshot's time. Anything unusual
// (a string that needs escaping, a resource with diagnostics) goes back
// to encoding/json, so the fast path only ever handles what it can spell
// exactly; TestResourceJSONMatchesEncoder and FuzzResourceJSON hold it
// to that.

// Indentation inside the registry's skills array: a skill's fields, a
// resource, a resource's fields.
const (
	skillFieldIndent = "\n      "
	resourceIndent   = "        "
	resourceFields   = "\n          "
)

// appendSkillJSON appends one skill as it appears in the registry's
// skills array to dst.
func appendSkillJSON(dst []byte, s *Skill) ([]byte, error) {
	if out, ok, err := appendPlainSkill(dst, s); ok || err != nil {
		return out, err
	}
	b, err := encodeSkill(s)
	return append(dst, b...), err
}

// encodeSkill is one skill as encoding/json writes it, apart from its
// plain resources (appendResource).
func encodeSkill(s *Skill) ([]byte, error) {
	if s.Resources == nil {
		return encodeIndented(s, "    ")
	}
	head := *s
	head.Resources = []Resource{}
	b, err := encodeIndented(&head, "    ")
	if err != nil {
		return nil, err
	}
	// A raw newline never occurs inside a JSON string, so this can only
	// be the skill's own resources field.
	const marker = skillFieldIndent + `"resources": [],`
	before, after, ok := bytes.Cut(b, []byte(marker))
	if !ok {
		// Never expected; the whole skill through encoding/json is
		// still right, where the head alone would drop the resources.
		return encodeIndented(s, "    ")
	}
	if len(s.Resources) == 0 {
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(s.Resources)*600)
	out = append(out, before...)
	out = append(out, skillFieldIndent+`"resources": `...)
	if out, err = appendResources(out, s.Resources); err != nil {
		return nil, err
	}
	out = append(out, ',')
	return append(out, after...), nil
}

// appendResources writes a skill's resources array, brackets included.
func appendResources(out []byte, rs []Resource) ([]byte, error) {
	out = append(out, '[')
	for i := range rs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '\n')
		out = append(out, resourceIndent...)
		var err error
		if out, err = appendResource(out, &rs[i]); err != nil {
			return nil, err
		}
	}
	if len(rs) > 0 {
		out = append(out, skillFieldIndent...)
	}
	return append(out, ']'), nil
}

// appendPlainSkill writes the common skill by hand: every string plain,
// frontmatter of strings, no diagnostics, link, shadowing or
// requirements. ok is false for any other skill, which encodeSkill
// then writes through encoding/json. Hand-writing the skill's own fields
// matters for many small skills, where they are most of the registry.
func appendPlainSkill(out []byte, s *Skill) (_ []byte, ok bool, err error) {
	if s.LinkedFrom != nil || s.ShadowedBy != "" || s.Requires != nil || s.Missing != nil || len(s.InstallHints) > 0 ||
		s.Diagnostics == nil || len(s.Diagnostics) > 0 || s.Resources == nil || s.Frontmatter == nil {
		return out, false, nil
	}
	for _, v := range []string{s.Name, s.Description, s.Root, s.SkillPath, s.SkillDir, s.SandboxSkillPath, s.SandboxSkillDir, string(s.Digest), string(s.TreeDigest)} {
		if !plainString(v) {
			return out, false, nil
		}
	}
	keys := make([]string, 0, len(s.Frontmatter))
	for k, v := range s.Frontmatter {
		if str, isString := v.(string); !isString || !plainString(k) || !plainString(str) {
			return out, false, nil
		}
		keys = append(keys, k)
	}
	for _, h := range s.Headings {
		if !plainString(h) {
			return out, false, nil
		}
	}
	slices.Sort(keys)
	field := func(name, v string) {
		out = append(out, skillFieldIndent+`"`...)
		out = append(out, name...)
		out = append(out, `": "`...)
		out = append(out, v...)
		out = append(out, `",`...)
	}
	out = slices.Grow(out, 1024+len(s.Resources)*600)
	out = append(out, '{')
	field("name", s.Name)
	field("description", s.Description)
	field("root", s.Root)
	field("skillPath", s.SkillPath)
	field("skillDir", s.SkillDir)
	field("sandboxSkillPath", s.SandboxSkillPath)
	field("sandboxSkillDir", s.SandboxSkillDir)
	field("digest", string(s.Digest))
	field("treeDigest", string(s.TreeDigest))
	out = append(out, skillFieldIndent+`"frontmatter": {`...)
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, skillFieldIndent+`  "`...)
		out = append(out, k...)
		out = append(out, `": "`...)
		out = append(out, s.Frontmatter[k].(string)...)
		out = append(out, '"')
	}
	if len(keys) > 0 {
		out = append(out, skillFieldIndent...)
	}
	out = append(out, "},"...)
	if len(s.Headings) > 0 {
		out = append(out, skillFieldIndent+`"headings": [`...)
		for i, h := range s.Headings {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, skillFieldIndent+`  "`...)
			out = append(out, h...)
			out = append(out, '"')
		}
		out = append(out, skillFieldIndent+"],"...)
	}
	out = append(out, skillFieldIndent+`"bodyOffset": `...)
	out = strconv.AppendInt(out, int64(s.BodyOffset), 10)
	out = append(out, ","+skillFieldIndent+`"resources": `...)
	if out, err = appendResources(out, s.Resources); err != nil {
		return nil, false, err
	}
	out = append(out, ","+skillFieldIndent+`"diagnostics": []`...)
	if s.Eligible != nil {
		out = append(out, ","+skillFieldIndent+`"eligible": `...)
		out = strconv.AppendBool(out, *s.Eligible)
	}
	return append(out, "\n    }"...), true, nil
}

// encodeIndented is v as encoding/json writes it at this depth of the
// registry, without the trailing newline.
func encodeIndented(v any, prefix string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// appendResource writes r at resourceIndent.
func appendResource(out []byte, r *Resource) ([]byte, error) {
	plain := r.Diagnostics != nil && len(r.Diagnostics) == 0
	for _, s := range []string{r.Path, r.Kind, r.HostPath, r.SandboxPath, string(r.Digest), r.ContentKind, r.Shebang, r.Runtime, r.Stat} {
		plain = plain && plainString(s)
	}
	if !plain {
		b, err := encodeIndented(r, resourceIndent)
		return append(out, b...), err
	}
	field := func(name, v string) {
		out = append(out, resourceFields+`"`...)
		out = append(out, name...)
		out = append(out, `": "`...)
		out = append(out, v...)
		out = append(out, `",`...)
	}
	out = append(out, '{')
	field("path", r.Path)
	field("kind", r.Kind)
	field("hostPath", r.HostPath)
	field("sandboxPath", r.SandboxPath)
	out = append(out, resourceFields+`"size": `...)
	out = strconv.AppendInt(out, r.Size, 10)
	out = append(out, ',')
	field("digest", string(r.Digest))
	field("contentKind", r.ContentKind)
	out = append(out, resourceFields+`"referenced": `...)
	out = strconv.AppendBool(out, r.Referenced)
	out = append(out, ',')
	if r.Executable != nil {
		out = append(out, resourceFields+`"executable": `...)
		out = strconv.AppendBool(out, *r.Executable)
		out = append(out, ',')
	}
	if r.Shebang != "" {
		field("shebang", r.Shebang)
	}
	if r.Runtime != "" {
		field("runtime", r.Runtime)
	}
	if r.Stat != "" {
		field("stat", r.Stat)
	}
	out = append(out, resourceFields+`"diagnostics": []`...)
	out = append(out, '\n')
	out = append(out, resourceIndent...)
	return append(out, '}'), nil
}

// plainString reports whether encoding/json writes s as it is between
// quotes: printable ASCII without a quote or a backslash.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
