package skills

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of the Agent Skills specification.
const (
	maxNameLen          = 64
	maxDescriptionLen   = 1024
	maxCompatibilityLen = 500
)

// allowedKeys are the only frontmatter keys the specification defines;
// strict validation rejects every other key.
var allowedKeys = []string{"allowed-tools", "compatibility", "description", "license", "metadata", "name"}

// ValidName reports whether name follows the specification: 1 to 64
// lowercase letters, digits and single hyphens, not starting or ending
// with a hyphen.
func ValidName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	if name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkFields applies the specification's field rules to parsed
// frontmatter. In lenient mode they are warnings (the skill still loads,
// as the compatibility contract asks); strict mode makes them errors and
// adds the rules only a validator enforces (allowed keys, metadata shape).
func checkFields(fm map[string]any, name, dirName, skillPath string, strict bool) []Diagnostic {
	sev := SeverityWarning
	if strict {
		sev = SeverityError
	}
	var ds []Diagnostic
	add := func(code, format string, args ...any) {
		ds = append(ds, Diagnostic{Severity: sev, Code: code, Detail: fmt.Sprintf(format, args...), Path: skillPath})
	}
	if n := utf8.RuneCountInString(name); n > maxNameLen {
		add(CodeFieldTooLong, "Skill name '%s' exceeds %d character limit (%d chars)", name, maxNameLen, n)
	} else if !ValidName(name) {
		add(CodeNameInvalid, "Skill name '%s' must use only lowercase letters, digits and single hyphens, and must not start or end with a hyphen", name)
	}
	if dirName != "" && name != dirName {
		add(CodeNameMismatch, "Directory name '%s' must match skill name '%s'", dirName, name)
	}
	if d, ok := fm["description"].(string); ok {
		if n := utf8.RuneCountInString(d); n > maxDescriptionLen {
			add(CodeFieldTooLong, "Description exceeds %d character limit (%d chars)", maxDescriptionLen, n)
		}
	}
	for _, k := range []string{"name", "description", "compatibility", "license", "allowed-tools"} {
		if v, ok := fm[k]; ok && v != nil {
			if _, isStr := v.(string); !isStr {
				note := ""
				if k == "allowed-tools" {
					note = " of space-separated tool names (some clients also accept a list)"
				}
				add(CodeFieldType, "Field '%s' must be a string%s, not %s", k, note, typeName(v))
			}
		}
	}
	ds = append(ds, checkMetadataValues(fm, skillPath, sev, strict)...)
	if s, ok := fm["compatibility"].(string); ok && utf8.RuneCountInString(s) > maxCompatibilityLen {
		add(CodeFieldTooLong, "Compatibility exceeds %d character limit (%d chars)", maxCompatibilityLen, utf8.RuneCountInString(s))
	}
	if _, err := LimitsOf(fm); err != nil {
		// Whatever the mode: a limit harness cannot read is not enforced,
		// so the skill does not load.
		ds = append(ds, Diagnostic{Severity: SeverityError, Code: CodeLimitsInvalid, Detail: err.Error(), Path: skillPath})
	}
	if _, err := TierOf(fm); err != nil {
		// A tier harness cannot read would run the skill on a model the
		// operator did not choose for it.
		ds = append(ds, Diagnostic{Severity: SeverityError, Code: CodeTierInvalid, Detail: err.Error(), Path: skillPath})
	}
	if _, err := PermissionsOf(fm); err != nil {
		// The skill loads (its text is context), but every execution of
		// its code is refused (skill_permissions_invalid): say so here,
		// before a run finds out.
		ds = append(ds, Diagnostic{Severity: sev, Code: CodePermissionsInvalid, Detail: err.Error() + "; every run of its scripts and servers is refused until it is fixed", Path: skillPath})
	}
	if why := DestructiveInvalid(fm); why != "" {
		ds = append(ds, Diagnostic{Severity: sev, Code: CodePermissionsInvalid, Detail: why, Path: skillPath})
	}
	if !strict {
		return ds
	}
	var extra []string
	for k := range fm {
		if !slices.Contains(allowedKeys, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		add(CodeUnexpectedFields, "Unexpected fields in frontmatter: %s. Only %s are allowed; move other data under 'metadata'", strings.Join(extra, ", "), strings.Join(allowedKeys, ", "))
	}
	if m, ok := fm["metadata"]; ok {
		if _, isMap := m.(map[string]any); !isMap {
			add(CodeMetadataNotMapping, "Field 'metadata' must be a mapping of keys to values")
		}
	}
	switch v, ok := fm["name"]; {
	case !ok || v == nil:
		add(CodeNameMissing, "Missing required field in frontmatter: name")
	case v == "":
		add(CodeNameMissing, "Field 'name' is empty: give the skill's name, the same as its directory's")
	}
	return ds
}

// checkMetadataValues holds metadata to the specification's shape, a
// mapping of keys to strings. A value that is itself a mapping is a
// client's namespace (harness keeps a skill's manifest under
// metadata.harness, other clients theirs under their own name): refusing
// it would refuse harness's own skills and much of what is published, so
// strict validation notes what a validator that follows the text to the
// letter will make of it instead. Numbers, booleans and lists are not
// namespaces: quoted, they are strings.
func checkMetadataValues(fm map[string]any, skillPath, sev string, strict bool) []Diagnostic {
	meta, _ := fm["metadata"].(map[string]any)
	var ds []Diagnostic
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		v := meta[k]
		if _, isStr := v.(string); isStr || v == nil {
			continue
		}
		if _, namespace := v.(map[string]any); namespace {
			if strict {
				ds = append(ds, Diagnostic{Severity: SeverityInfo, Code: CodeFieldType, Path: skillPath,
					Detail: fmt.Sprintf("metadata.%s is a mapping (a client's namespace, such as harness's manifest); the specification maps metadata keys to strings, so a validator that follows it to the letter refuses this skill, while harness and clients that keep unknown metadata accept it", k)})
			}
			continue
		}
		ds = append(ds, Diagnostic{Severity: sev, Code: CodeFieldType, Path: skillPath,
			Detail: fmt.Sprintf("metadata.%s must be a string, not %s: the specification maps metadata keys to strings (some clients accept other values)%s", k, typeName(v), asString(k, v))})
	}
	return ds
}

// asString suggests the metadata value as a string, where one reads well.
func asString(k string, v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			if _, nested := e.(map[string]any); nested {
				return ""
			}
			parts = append(parts, fmt.Sprint(e))
		}
		return fmt.Sprintf("; write it as one string, e.g. %s: %q", k, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("; quote it: %s: %q", k, fmt.Sprint(v))
}

// typeName says what YAML gave instead of a string.
func typeName(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case bool:
		return "true or false"
	case int, int64, uint64, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
