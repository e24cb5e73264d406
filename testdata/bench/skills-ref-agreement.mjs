// Measures how often `harness skills validate --strict` and the Agent
// Skills reference validator (npm skills-ref) reach the same verdict on
// the same skill directories, and groups the disagreements by cause.
//
//   node testdata/bench/skills-ref-agreement.mjs HARNESS SKILLS_REF_PKG ROOT...
//
// Every directory holding SKILL.md below a ROOT is validated on its own by
// both (nested skills included), so discovery rules do not enter the
// comparison. Output: one JSON document on stdout (totals, classes with
// counts and up to three example directories each).
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [harness, refPkg, ...roots] = process.argv.slice(2);
if (!harness || !refPkg || roots.length === 0) {
  console.error("usage: node testdata/bench/skills-ref-agreement.mjs HARNESS SKILLS_REF_PKG ROOT...");
  process.exit(2);
}
const { validate } = await import(pathToFileURL(path.join(refPkg, "dist", "index.js")).href);

function skillDirs(root) {
  const out = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    if (entries.some((e) => e.name === "SKILL.md" && (e.isFile() || e.isSymbolicLink()))) out.push(dir);
    for (const e of entries) {
      if (e.isDirectory() && e.name !== ".git" && e.name !== "node_modules") walk(path.join(dir, e.name));
    }
  };
  walk(path.resolve(root));
  return out.sort();
}

// harness validates many paths per call; each result is one path.
function harnessVerdicts(dirs) {
  const out = new Map();
  for (let i = 0; i < dirs.length; i += 200) {
    const batch = dirs.slice(i, i + 200);
    const r = spawnSync(harness, ["skills", "validate", "--strict", "--format", "json", ...batch], { encoding: "utf8", maxBuffer: 1 << 30 });
    if (r.status !== 0 && r.status !== 1) throw new Error(`harness exited ${r.status}: ${r.stderr}`);
    for (const v of JSON.parse(r.stdout).results) {
      const codes = new Set();
      for (const d of v.diagnostics) if (d.severity === "error") codes.add(d.code);
      for (const s of v.skills) for (const d of s.diagnostics) if (d.severity === "error") codes.add(d.code);
      out.set(path.resolve(v.path), [...codes].sort());
    }
  }
  return out;
}

// A reference message with its specifics (names, counts, field lists)
// replaced, so that one rule is one class.
function refClass(msg) {
  return msg
    .replace(/'[^']*'/g, "'…'")
    .replace(/\d+ chars/g, "N chars")
    .replace(/: .*\. Only/, ": … Only")
    .replace(/(YAML|yaml)[^:]*:.*/, "$1: …")
    .replace(/\/\S+/g, "PATH");
}

// The harness rule code a reference message corresponds to, so that two
// invalid verdicts can be checked for the same reasons.
const refRules = [
  [/^Directory name .* must match skill name/, "name-mismatch"],
  [/^Unexpected fields in frontmatter/, "unexpected-fields"],
  [/exceeds \d+ character limit|Compatibility exceeds|Description exceeds/, "field-too-long"],
  [/must be lowercase|cannot start or end with a hyphen|consecutive hyphens|contains invalid characters|Field 'name' must be a non-empty string/, "name-invalid"],
  [/^Missing required field in frontmatter: name/, "name-missing"],
  [/^Missing required field in frontmatter: description|Field 'description' must be a non-empty string/, "description-missing"],
  [/must start with YAML frontmatter/, "frontmatter-missing"],
  [/not properly closed/, "frontmatter-unclosed"],
  [/^Invalid YAML/, "frontmatter-invalid"],
  [/must be a YAML mapping/, "frontmatter-not-mapping"],
  [/Field 'compatibility' must be a string/, "field-too-long"],
];
function refCodes(errors) {
  const codes = new Set();
  for (const e of errors) {
    const hit = refRules.find(([re]) => re.test(e));
    codes.add(hit ? hit[1] : "other: " + refClass(e));
  }
  return [...codes].sort();
}

const dirs = roots.flatMap(skillDirs);
const h = harnessVerdicts(dirs);
const classes = new Map();
let agree = 0, bothValid = 0, bothInvalid = 0, sameReasons = 0;
const reasonDiffs = new Map();
for (const dir of dirs) {
  const refErrors = await validate(dir);
  const codes = h.get(dir) ?? ["(no result)"];
  const refValid = refErrors.length === 0, hValid = codes.length === 0;
  if (refValid === hValid) {
    agree++;
    if (refValid) {
      bothValid++;
      continue;
    }
    bothInvalid++;
    const rc = refCodes(refErrors);
    if (JSON.stringify(rc) === JSON.stringify(codes)) {
      sameReasons++;
    } else {
      const key = JSON.stringify({ harness: codes, reference: rc });
      const c = reasonDiffs.get(key) ?? { count: 0, examples: [] };
      c.count++;
      if (c.examples.length < 3) c.examples.push(path.relative(process.cwd(), dir));
      reasonDiffs.set(key, c);
    }
    continue;
  }
  const key = JSON.stringify({
    harness: hValid ? "valid" : codes,
    reference: refValid ? "valid" : [...new Set(refErrors.map(refClass))].sort(),
  });
  const c = classes.get(key) ?? { count: 0, examples: [], refMessages: [] };
  c.count++;
  if (c.examples.length < 3) {
    c.examples.push(path.relative(process.cwd(), dir));
    c.refMessages.push(refErrors.slice(0, 2));
  }
  classes.set(key, c);
}
const report = {
  skills: dirs.length,
  agree,
  bothValid,
  bothInvalid,
  bothInvalidSameReasons: sameReasons,
  agreement: dirs.length ? +(agree / dirs.length * 100).toFixed(2) : 0,
  classes: [...classes].map(([k, v]) => ({ ...JSON.parse(k), ...v })).sort((a, b) => b.count - a.count),
  reasonClasses: [...reasonDiffs].map(([k, v]) => ({ ...JSON.parse(k), ...v })).sort((a, b) => b.count - a.count),
};
console.log(JSON.stringify(report, null, 2));
