package cfc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Severities of a finding.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
)

// Finding is one rule that matched, with the line it matched on.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Line     int    `json:"line"`
	Match    string `json:"match"`
	// Hidden is the decoded text of invisible characters, when the rule
	// is about hidden content.
	Hidden string `json:"hidden,omitempty"`
}

type rule struct {
	id       string
	severity string
	re       *regexp.Regexp
	// hints are lowercase substrings one of which any match contains: a
	// line without them skips the regular expression, which keeps a scan
	// of thousands of skills cheap.
	hints []string
}

// rules is the catalog. Ids are stable and name their family; a rule is
// never renamed or reused, only added.
var rules = []rule{
	{"remote-code.pipe-to-shell", SeverityCritical, regexp.MustCompile(`(?i)\b(curl|wget)\b[^|\n]*\|\s*(sudo\s+)?(ba|z|k)?sh\b`), []string{"curl", "wget"}},
	{"obfuscation.base64-shell", SeverityCritical, regexp.MustCompile(`(?i)base64\s+(-d|--decode)[^|\n]*\|\s*(ba|z)?sh\b`), []string{"base64"}},
	{"exfiltration.webhook", SeverityHigh, regexp.MustCompile(`(?i)\b(webhook\.site|requestbin\.|pipedream\.net|hookbin\.com|discord(app)?\.com/api/webhooks|hooks\.slack\.com/services)`), []string{"webhook", "requestbin", "pipedream", "hookbin", "hooks.slack"}},
	{"exfiltration.tunnel", SeverityHigh, regexp.MustCompile(`(?i)\b(ngrok\.io|ngrok-free\.app|trycloudflare\.com|localtunnel\.me|serveo\.net)`), []string{"ngrok", "trycloudflare", "localtunnel", "serveo"}},
	{"exfiltration.secret-over-http", SeverityCritical, regexp.MustCompile(`(?i)(curl|wget|fetch|requests\.(post|get))[^\n]*\$\{?(\w*(TOKEN|SECRET|API_KEY|PASSWORD)\w*)`), []string{"token", "secret", "api_key", "password"}},
	{"credentials.read", SeverityHigh, regexp.MustCompile(`(~|\$HOME)?/?\.(ssh/(id_\w+|authorized_keys)|aws/credentials|config/gcloud|kube/config|netrc)\b|(^|[\s/"'])\.env\b`), []string{".ssh/", ".aws/", "gcloud", ".kube/", ".netrc", ".env"}},
	{"reverse-shell", SeverityCritical, regexp.MustCompile(`(?i)(/dev/tcp/\d|\bnc\s+(-\w+\s+)*-e\b|\bncat\b.*-e\s|socat\s+.*exec:|bash\s+-i\s*>&)`), []string{"/dev/tcp/", "nc", "socat", "bash"}},
	{"persistence", SeverityHigh, regexp.MustCompile(`(?i)(crontab\s+-|/etc/cron|\.bashrc|\.profile\b|systemctl\s+enable|/etc/systemd/system)`), []string{"cron", ".bashrc", ".profile", "systemctl", "systemd"}},
	{"destructive.command", SeverityCritical, regexp.MustCompile(`(?i)\brm\s+-[a-z]*r[a-z]*f?\s+(/|~|\$HOME)(\s|$)|\bmkfs\.|\bdd\s+if=.*\bof=/dev/`), []string{"rm", "mkfs.", "dd"}},
	{"privilege-escalation", SeverityHigh, regexp.MustCompile(`(?i)\bsudo\s+(-s|su\b|bash)|\bchmod\s+[ugo]*\+s\b|\bsetcap\b`), []string{"sudo", "chmod", "setcap"}},
	{"prompt-injection.override", SeverityCritical, regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\s+(all\s+)?(previous|prior|above|earlier)\s+(instructions|rules|directions)`), []string{"ignore", "disregard", "forget"}},
	{"prompt-injection.conceal", SeverityHigh, regexp.MustCompile(`(?i)\b(do not|don't|never)\s+(tell|inform|mention|reveal|show)\s+(this\s+to\s+)?(the\s+)?(user|operator|human)`), []string{"tell", "inform", "mention", "reveal", "show"}},
	{"prompt-injection.coercive-tool", SeverityHigh, regexp.MustCompile(`(?i)\balways\s+(call|run|use|invoke)\s+(this|the\s+\w+)\s+(tool|script)\s+first\b`), []string{"always"}},
	{"secrets.hardcoded", SeverityHigh, regexp.MustCompile(`\b(AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{36}|sk-[A-Za-z0-9]{32,}|xox[baprs]-[A-Za-z0-9-]{10,}|-----BEGIN (RSA |EC |OPENSSH )?PRIVATE KEY-----)`), []string{"akia", "ghp_", "sk-", "xox", "private key"}},
}

// Scan applies the rule catalog to text, line by line, and reports
// hidden characters (Unicode tag characters, bidi controls, zero-width
// characters) with the text they hide decoded.
func Scan(text string) []Finding {
	var out []Finding
	for i, line := range strings.Split(text, "\n") {
		lower := strings.ToLower(line)
		for _, r := range rules {
			if !hinted(lower, r.hints) {
				continue
			}
			if m := r.re.FindString(line); m != "" {
				out = append(out, Finding{Rule: r.id, Severity: r.severity, Line: i + 1, Match: bound(m)})
			}
		}
		if f, ok := hidden(line, i+1); ok {
			out = append(out, f)
		}
	}
	return out
}

func hinted(lower string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return len(hints) == 0
}

// hidden finds invisible characters; tag characters (U+E0020–U+E007E)
// spell ASCII that a human never sees but a model may read.
func hidden(line string, n int) (Finding, bool) {
	ascii := true
	for i := 0; i < len(line); i++ {
		if line[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return Finding{}, false
	}
	var tags strings.Builder
	var invisible int
	for _, r := range line {
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			tags.WriteRune(r - 0xE0000)
		case r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r == 0xFEFF,
			r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			invisible++
		}
	}
	switch {
	case tags.Len() > 0:
		return Finding{Rule: "hidden.unicode-tags", Severity: SeverityCritical, Line: n, Match: "Unicode tag characters", Hidden: bound(tags.String())}, true
	case invisible > 0:
		return Finding{Rule: "hidden.invisible-characters", Severity: SeverityHigh, Line: n, Match: fmt.Sprintf("%d zero-width or bidi control characters", invisible), Hidden: bound(visible(line))}, true
	}
	return Finding{}, false
}

// visible shows a line with its invisible characters spelled out.
func visible(line string) string {
	var b strings.Builder
	for _, r := range line {
		if !unicode.IsGraphic(r) && r != ' ' && r != '\t' {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ExecutableFinding flags a bundled binary executable (ELF, Mach-O, PE)
// among a skill's files.
func ExecutableFinding(head []byte) (Finding, bool) {
	for _, magic := range []string{"\x7fELF", "\xcf\xfa\xed\xfe", "\xfe\xed\xfa\xcf", "MZ"} {
		if strings.HasPrefix(string(head), magic) {
			return Finding{Rule: "bundled-executable", Severity: SeverityHigh, Line: 0, Match: "binary executable"}, true
		}
	}
	return Finding{}, false
}

func bound(s string) string {
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Critical reports whether any finding is critical.
func Critical(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityCritical {
			return true
		}
	}
	return false
}

// scanLogic changes whenever Scan, hidden or ExecutableFinding find
// something different for the same text; CatalogVersion includes it.
const scanLogic = 1

// CatalogVersion identifies what Scan finds: the rules and the scanning
// logic. Findings remembered between runs (audit's persistent cache) are
// kept only under the version that produced them.
func CatalogVersion() string {
	h := sha256.New()
	fmt.Fprintf(h, "logic %d\n", scanLogic)
	for _, r := range rules {
		fmt.Fprintf(h, "%q %q %q %q\n", r.id, r.severity, r.re.String(), r.hints)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
