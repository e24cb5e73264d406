package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/skills"
)

// validationFindings flattens results into one list: each diagnostic
// with the file it is about.
func validationFindings(results []*skills.Validation) []skills.Diagnostic {
	var out []skills.Diagnostic
	for _, v := range results {
		out = append(out, v.Diagnostics...)
		for _, s := range v.Skills {
			out = append(out, s.Diagnostics...)
		}
	}
	return out
}

// relPath shows a diagnostic's file relative to the working directory,
// as CI annotations and SARIF consumers expect.
func relPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(p)
}

// writeGitHub prints GitHub Actions workflow commands, one annotation per
// problem on its file and line.
func writeGitHub(w io.Writer, results []*skills.Validation) {
	esc := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	prop := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
	for _, d := range validationFindings(results) {
		level := "warning"
		if d.Severity == skills.SeverityError {
			level = "error"
		}
		loc := "file=" + prop.Replace(relPath(d.Path))
		if d.Line > 0 {
			loc += fmt.Sprintf(",line=%d", d.Line)
		}
		fmt.Fprintf(w, "::%s %s,title=%s::%s\n", level, loc, prop.Replace(d.Code), esc.Replace(d.Detail))
	}
}

// sarifLog is the part of SARIF 2.1.0 that code-scanning tools read.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// toSARIF builds a SARIF 2.1.0 log of the problems found.
func toSARIF(results []*skills.Validation) sarifLog {
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "harness skills validate", Version: version, Rules: []sarifRule{}}}, Results: []sarifResult{}}
	var ids []string
	for _, d := range validationFindings(results) {
		level := "warning"
		if d.Severity == skills.SeverityError {
			level = "error"
		}
		loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: relPath(d.Path)}}}
		if d.Line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: d.Line}
		}
		run.Results = append(run.Results, sarifResult{RuleID: d.Code, Level: level, Message: sarifMessage{Text: d.Detail}, Locations: []sarifLocation{loc}})
		if !slices.Contains(ids, d.Code) {
			ids = append(ids, d.Code)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: id, ShortDescription: sarifMessage{Text: "harness skill rule " + id}})
	}
	return sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
}
