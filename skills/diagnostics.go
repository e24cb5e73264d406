package skills

// Severities of a Diagnostic. An error keeps a skill out of the registry
// (or fails `skills validate`); a warning is reported and the skill loads.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// Diagnostic codes. They are a contract: scripts and reviewers match on
// them, so a code is never reused for another meaning.
const (
	CodeFrontmatterMissing    = "frontmatter-missing"
	CodeFrontmatterUnclosed   = "frontmatter-unclosed"
	CodeFrontmatterInvalid    = "frontmatter-invalid"
	CodeFrontmatterNotMapping = "frontmatter-not-mapping"
	CodeDescriptionMissing    = "description-missing"
	CodeNameMissing           = "name-missing"
	CodeNameInvalid           = "name-invalid"
	CodeNameMismatch          = "name-mismatch"
	CodeFieldTooLong          = "field-too-long"
	CodeFieldType             = "field-type"
	CodeByteOrderMark         = "byte-order-mark"
	CodeMCPConfigInvalid      = "mcp-config-invalid"
	CodeMCPFileMissing        = "mcp-file-missing"
	CodeUnexpectedFields      = "unexpected-fields"
	CodeMetadataNotMapping    = "metadata-not-mapping"
	CodeLimitsInvalid         = "limits-invalid"
	CodeTierInvalid           = "tier-invalid"
	CodePermissionsInvalid    = "permissions-invalid"
	CodeSkillFileBinary       = "skill-file-binary"
	CodeSkillFileTooLarge     = "skill-file-too-large"
	CodeSkillFileUnreadable   = "skill-file-unreadable"
	CodeSkillFileName         = "skill-file-name"
	CodeSkillShadowed         = "skill-shadowed"
	CodeDuplicateSkillName    = "duplicate-skill-name"
	CodeNestedSkillIgnored    = "nested-skill-ignored"
	CodeScanLimitReached      = "scan-limit-reached"
	CodeSkillOutsideRoot      = "skill-outside-root"
	CodeSkillReachedTwice     = "skill-reached-twice"
	CodeResourceOutsideRoot   = "resource-outside-root"
	CodeResourceNotRegular    = "resource-not-regular"
	CodeResourceUnreadable    = "resource-unreadable"
	CodeBrokenReference       = "broken-reference"
	CodeSymlinkCycle          = "symlink-cycle"
	CodeCatalogTruncated      = "catalog-truncated"
)

// Diagnostic is one problem found while scanning or validating.
type Diagnostic struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Detail   string `json:"detail"`
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
}

func hasError(ds []Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}
