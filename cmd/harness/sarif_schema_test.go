package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harness-dev/harness/internal/testenv"
)

// sarifSchema is the OASIS SARIF 2.1.0 schema as Microsoft's SARIF test
// matchers ship it (npm @microsoft/jest-sarif, installed by the tools
// task): a schema this project did not write checks what it writes.
const sarifSchema = "../../.tools/npm/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json"

func TestValidateSARIFMatchesTheSchema(t *testing.T) {
	f, err := os.Open(sarifSchema)
	testenv.Need(t, "the SARIF 2.1.0 schema (npm @microsoft/jest-sarif)", err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatal(err)
	}

	// Several problems in several skills, with and without a line.
	root := t.TempDir()
	testenv.WriteTree(t, root, map[string]string{
		"bad-name/SKILL.md":   "---\nname: Bad_Name\ndescription: d\nversion: 1\n---\nbody\n",
		"unclosed/SKILL.md":   "---\nname: unclosed\ndescription: d\n---# Title\n",
		"no-desc/SKILL.md":    "---\nname: no-desc\n---\nSee [x](references/missing.md).\n",
		"good/SKILL.md":       "---\nname: good\ndescription: Fine. Use when fine.\n---\nbody\n",
		"good/scripts/run.sh": "#!/bin/sh\necho ok\n",
	})
	var stdout, stderr bytes.Buffer
	code := Main([]string{"harness", "skills", "validate", "--strict", "--format", "sarif", root}, strings.NewReader(""), &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (errors found); stderr:\n%s", code, stderr.String())
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(stdout.Bytes()))
	if err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if err := schema.Validate(out); err != nil {
		t.Fatalf("SARIF output does not match the SARIF 2.1.0 schema: %v\n%s", err, stdout.String())
	}
	// The schema does bite: a log claiming another version fails it.
	broken := strings.Replace(stdout.String(), `"version": "2.1.0"`, `"version": "2.0"`, 1)
	if bad, err := jsonschema.UnmarshalJSON(strings.NewReader(broken)); err != nil || schema.Validate(bad) == nil {
		t.Error("the schema accepted a log with version 2.0; is it the SARIF schema?")
	}
	for _, want := range []string{"name-invalid", "unexpected-fields", "frontmatter-unclosed", "description-missing", filepath.ToSlash("bad-name/SKILL.md")} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("SARIF output lacks %q", want)
		}
	}
}
