package eval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scorecard"
)

// An unsealed eval directory can be rewritten with its journal chained
// again; the result must still say what its gradings say.
func TestResultAgreesWithGradings(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, record.DirEvalGrading), 0o755); err != nil {
		t.Fatal(err)
	}
	m := record.EvalManifest{Skill: "s", Configurations: []string{record.ConfigWithSkill, record.ConfigWithoutSkill}, Models: []string{"m"}, Epochs: 1,
		Cells: []record.EvalCell{{ID: "e1_with_skill_1", EvalID: "1", Configuration: record.ConfigWithSkill, Model: "m", Epoch: 1},
			{ID: "e1_without_skill_1", EvalID: "1", Configuration: record.ConfigWithoutSkill, Model: "m", Epoch: 1}}}
	v := &Verification{Manifest: m, Graded: map[string]artifacts.Digest{}}
	var gradings []record.EvalGrading
	for i, c := range m.Cells {
		it := record.GradedItem{Text: "x", Kind: "answer-contains", Status: record.GradeFailed}
		if i == 0 {
			it.Passed, it.Status = true, record.GradePassed
		}
		g := record.EvalGrading{Envelope: artifacts.NewEnvelope(record.TypeEvalGrading, record.EvalVersion), Cell: c,
			Run: record.EvalRun{Status: "succeeded"}, Expectations: []record.GradedItem{it}, Summary: countItems([]record.GradedItem{it})}
		d, err := artifacts.NewRedactor().WriteJSONDigest(filepath.Join(dir, record.DirEvalGrading, c.ID+".json"), g)
		if err != nil {
			t.Fatal(err)
		}
		v.Graded[c.ID] = d
		gradings = append(gradings, g)
	}
	honest := scorecard.Summarize(m, gradings)
	if why := v.resultAgrees(dir, honest); why != "" {
		t.Fatalf("the honest result is refused: %s", why)
	}
	forged := scorecard.Summarize(m, gradings)
	for i := range forged.Summaries {
		forged.Summaries[i].PassRate.Mean = 1
	}
	if why := v.resultAgrees(dir, forged); why == "" {
		t.Fatal("a result that says more than its gradings was accepted")
	}
}
