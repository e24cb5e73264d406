package run

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/harness-dev/harness/record"
)

// notRecorded are the Options fields that do not shape what a run does,
// each with the reason; every other field must survive run.json.
var notRecorded = map[string]string{
	"APIKey":         "a secret: never written; resume takes it from the environment",
	"RequestTimeout": "transport: a resume sets its own",
	"FallbackModel":  "transport: a resume sets its own",
	"Stream":         "transport: a resume sets its own",
	"MaxRetries":     "transport: a resume sets its own",
	"RetryMaxWait":   "transport: a resume sets its own",
	"RunKey":         "a secret: never written; resume takes it from the environment",
	"Timeout":        "wall clock per segment: a resume sets its own",
	"RunID":          "names the directory, which resume is given",
	"OnEvent":        "rendering, not behaviour",
	"Stderr":         "rendering, not behaviour",
	"Now":            "the clock",
	"Version":        "the harness binary: compared as identity drift, not restored",
	"mcpFile":        "the --mcp-config file as read: its digest is recorded, and a resume reads the file again",
	"commandGrant":   "the --command-grant file as read: its digest is recorded, and a resume reads the file again",
	"Previous":       "a cache of digests: the run's own snapshot is recorded",
	"Audits":         "a cache of content-scan findings by digest: the findings are recorded",
	"EmbeddingCache": "a cache of vectors: a resume uses its own",
	"IndexCache":     "a cache of fetched skill indexes: a resume uses its own",
	"SnapshotCache":  "a cache of digests by stat fingerprint: a resume uses its own",
	"CommandCache":   "a cache of toolchain builds: a resume uses its own",
	"EvalDraft":      "a hook the caller gives (it runs a draft's evals); the gate it serves, ForgeMinPassRate, is recorded",
	"Outputs":        "where the result is delivered, not what the run is: recorded beside the inputs (run.created outputs), and a resume may override it",
}

// TestOptionsRoundTripThroughRunJSON fills every field of Options with a
// value of its own, writes the inputs as run.json would, reads them back
// as resume does, and requires each field to come back. A field added to
// Options and forgotten in inputsOf or optionsOf fails here: that seam is
// where the prompt's role once fell through.
func TestOptionsRoundTripThroughRunJSON(t *testing.T) {
	var o Options
	v := reflect.ValueOf(&o).Elem()
	typ := v.Type()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if _, skip := notRecorded[f.Name]; skip {
			continue
		}
		fill(t, v.Field(i), f.Name, i)
	}
	// Paths are recorded resolved (absolute, as resolve leaves them);
	// the sandbox is one of the known backends.
	o.Workspace, o.Cwd, o.SkillsRoots = "/ws", "sub", []string{"/ws/skills", "/ws/more"}
	o.ExternalSkillsRoots = []string{"/shared/skills", "/team/skills"}
	o.Sandbox, o.Profiles, o.ArtifactsDir, o.MCPConfig, o.CommandGrant = "landlock", "/profiles.yaml", "/runs", "/mcp.json", "/grant.yaml"
	o.ReadOnly, o.AllowProtectedWrite = []string{"/ws/vendor", "/ws/ci"}, []string{"/ws/.git/info"}
	// The SkillForge and discovery settings are recorded when their tools
	// are allowed.
	o.AllowTools = append(o.AllowTools, "create_skill", "discover_skills")
	res := resolved{workspace: o.Workspace, cwd: o.Cwd, skillsRoots: o.SkillsRoots, externalRoots: o.ExternalSkillsRoots, runDir: "/runs/r1", runID: "r1"}
	for _, p := range o.Attach {
		res.attachments = append(res.attachments, record.Attachment{Path: p})
	}

	lin := lineage{depth: 2, maxDepth: 4, activationSource: record.SourceSubagent}
	in := inputsOf(o, lin, res)
	m := record.Manifest{Inputs: in, Sources: record.Sources{ConfigFile: o.ConfigFile, Values: o.Sources}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back record.Manifest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, gotLin := optionsOf(back.Inputs, back.Sources)
	if gotLin.depth != lin.depth || gotLin.maxDepth != lin.maxDepth || gotLin.activationSource != lin.activationSource {
		t.Errorf("lineage: wrote %+v, resume restores %+v", lin, gotLin)
	}
	gv := reflect.ValueOf(got)
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		if _, skip := notRecorded[name]; skip {
			continue
		}
		want, have := show(v.Field(i)), show(gv.Field(i))
		if want != have {
			t.Errorf("%s: wrote %s, resume restores %s", name, want, have)
		}
	}
}

// fill gives a field a non-zero value that differs from its neighbours'.
func fill(t *testing.T, f reflect.Value, name string, i int) {
	t.Helper()
	f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem() // unexported too
	switch f.Kind() {
	case reflect.String:
		f.SetString(fmt.Sprintf("%s-%d", name, i))
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Pointer:
		switch f.Type().Elem().Kind() {
		case reflect.Float64:
			v := float64(i) / 10
			f.Set(reflect.ValueOf(&v))
		case reflect.Int64:
			v := int64(i)
			f.Set(reflect.ValueOf(&v))
		default:
			t.Fatalf("Options.%s: pointer to %s: teach this test to fill it", name, f.Type().Elem().Kind())
		}
	case reflect.Uint64:
		f.SetUint(uint64(i+1) << 20)
	case reflect.Int, reflect.Int64:
		if f.Type() == reflect.TypeOf(time.Duration(0)) {
			f.SetInt(int64(time.Duration(i) * time.Second))
		} else {
			f.SetInt(int64(i + 1))
		}
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.Uint8 {
			f.SetBytes([]byte(`{"type":"string","title":"` + name + `"}`))
			break
		}
		f.Set(reflect.ValueOf([]string{name + "-a", name + "-b"}))
	case reflect.Map:
		f.Set(reflect.ValueOf(map[string]string{name: "flag"}))
	default:
		t.Fatalf("Options.%s: kind %s: say in notRecorded why it is not written to run.json, or teach this test to fill it", name, f.Kind())
	}
}

// show is a field's value for comparison: pointers by what they point at.
func show(f reflect.Value) string {
	if f.Kind() == reflect.Pointer && !f.IsNil() {
		return "&" + fmt.Sprint(f.Elem())
	}
	return fmt.Sprint(f)
}
