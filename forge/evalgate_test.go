package forge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// result is an eval's result as harness eval writes it: a with_skill and
// a without_skill summary on one model.
func result(status string, with float64, n int, without float64) *record.EvalResult {
	return &record.EvalResult{Status: status, Dir: "/evals/x", Summaries: []record.EvalSummary{
		{Configuration: record.ConfigWithSkill, Model: "m", PassRate: record.Stat{N: n, Mean: with}},
		{Configuration: record.ConfigWithoutSkill, Model: "m", PassRate: record.Stat{N: n, Mean: without}},
	}}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    *record.EvalResult
		bound  float64
		met    bool
		reason string
	}{
		{"above the bound", result("passed", 1, 2, 0), 0.8, true, ""},
		{"exactly the bound, as a mean of thirds rounds it", result("passed", 2.0/3, 3, 0), 0.6666666666666667, true, ""},
		{"below the bound", result("failed", 0.5, 2, 0), 0.8, false, "with_skill's mean pass rate is 0.50 (n=2), below --forge-min-pass-rate 0.8"},
		{"cells missing: numbers over what ran do not make a pass", result("incomplete", 1, 1, 0), 0.5, false, "its evals did not finish"},
		{"nothing graded is never a pass", &record.EvalResult{Status: "passed"}, 0, false, "no with_skill cell"},
		{"with_skill with no cells is never a pass", result("passed", 0, 0, 0), 0, false, "no with_skill cell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := Judge(tc.res, tc.bound)
			if se.Met != tc.met || !strings.Contains(se.Reason, tc.reason) || (tc.met && se.Reason != "") {
				t.Fatalf("Judge = %+v; want met %v, reason containing %q", se, tc.met, tc.reason)
			}
			if se.MinPassRate != tc.bound || se.Dir != tc.res.Dir {
				t.Errorf("Judge = %+v: the bound and the eval directory are a person's to read", se)
			}
		})
	}
}

// shouter is a draft that ships evals (a check harness decides).
func shouter() Draft {
	return Draft{Name: "shout", Description: "Answers in capital letters. Use when asked to shout.", Body: "Answer in capital letters only.",
		Permissions: map[string]any{},
		Files:       map[string]string{"evals/evals.yaml": "skill_name: shout\nevals:\n  - id: 1\n    prompt: Shout hello\n    checks:\n      - answer-contains: HELLO\n"}}
}

// The hook here returns a fixed result: running evals is the caller's
// contract (cmd/harness runs them through harness eval, which the
// forge_eval_gate script drives against the scripted model); what is
// under test is what the forge does with the numbers.
func TestEvalGate(t *testing.T) {
	bound := 0.8
	for _, tc := range []struct {
		name     string
		approve  string
		draft    Draft
		gate     *float64
		res      *record.EvalResult
		err      error
		calls    int
		outcome  string
		noEval   bool
		met      bool
		reason   string
		passRate float64
	}{
		{name: "evals meet the gate: promoted", approve: "low", draft: shouter(), gate: &bound, res: result("passed", 1, 1, 0), calls: 1, outcome: record.ForgePromoted, met: true, passRate: 1},
		{name: "evals miss the gate: pending with the numbers", approve: "low", draft: shouter(), gate: &bound, res: result("failed", 0.5, 2, 0), calls: 1,
			outcome: record.ForgePending, reason: "0.50 (n=2), below --forge-min-pass-rate 0.8", passRate: 0.5},
		{name: "evals cannot run: pending with the reason", approve: "low", draft: shouter(), gate: &bound, err: errors.New("model_missing"), calls: 1,
			outcome: record.ForgePending, reason: "its evals could not run (model_missing)"},
		{name: "evals meet the gate, the tier still waits", approve: "none", draft: shouter(), gate: &bound, res: result("passed", 1, 1, 0), calls: 1,
			outcome: record.ForgePending, met: true, passRate: 1},
		{name: "no gate: the evals do not run", approve: "low", draft: shouter(), calls: 0, outcome: record.ForgePromoted, noEval: true},
		{name: "no evals: the tier alone decides", approve: "low", draft: Draft{Name: "plain", Description: "Says hi. Use to greet.", Body: "Say hi.", Permissions: map[string]any{}},
			gate: &bound, calls: 0, outcome: record.ForgePromoted, noEval: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.approve, nil)
			calls := 0
			fx.forge.cfg.MinPassRate = tc.gate
			fx.forge.cfg.EvalDraft = func(ctx context.Context, skillDir, evalDir, label string) (*record.EvalResult, error) {
				calls++
				if _, err := os.Stat(filepath.Join(skillDir, "evals", "evals.yaml")); err != nil {
					t.Errorf("the hook is not given the draft: %v", err)
				}
				if label != tc.draft.Name+"-attempt-1" || filepath.Dir(evalDir) != filepath.Dir(skillDir) {
					t.Errorf("label %q, eval directory %s beside draft %s", label, evalDir, skillDir)
				}
				if tc.err != nil {
					return nil, tc.err
				}
				return tc.res, nil
			}
			a, err := fx.forge.Create(context.Background(), call, tc.draft)
			if err != nil {
				t.Fatal(err)
			}
			if calls != tc.calls || a.Outcome != tc.outcome {
				t.Fatalf("hook called %d times, outcome %s (want %d, %s): %+v", calls, a.Outcome, tc.calls, tc.outcome, a)
			}
			_, live := os.Stat(filepath.Join(fx.root, tc.draft.Name))
			if (live == nil) != (tc.outcome == record.ForgePromoted) {
				t.Errorf("outcome %s, live copy: %v", a.Outcome, live)
			}
			h, _ := fx.store.History(tc.draft.Name)
			v := h.Versions[len(h.Versions)-1]
			var rec record.SkillForge
			if err := artifacts.ReadJSON(filepath.Join(fx.run, record.FileSkillForge), record.TypeSkillForge, 1, &rec); err != nil {
				t.Fatal(err)
			}
			recorded := rec.Attempts[len(rec.Attempts)-1].Eval
			if tc.noEval {
				if a.Eval != nil || v.Eval != nil || recorded != nil {
					t.Fatalf("an eval recorded where none ran: %+v", a.Eval)
				}
				return
			}
			for where, e := range map[string]*record.SkillEval{"attempt": a.Eval, "skill-forge.json": recorded, "store": v.Eval} {
				if e == nil || e.Met != tc.met || !strings.Contains(e.Reason, tc.reason) || e.MinPassRate != bound {
					t.Fatalf("%s eval = %+v", where, e)
				}
				if tc.res != nil && (e.PassRate == nil || *e.PassRate != tc.passRate || e.N != tc.res.Summaries[0].PassRate.N || e.Dir != tc.res.Dir) {
					t.Errorf("%s eval = %+v: the numbers and the eval directory are missing", where, e)
				}
			}
			if !tc.met {
				ps, _ := fx.store.Pending()
				if len(ps) != 1 || ps[0].Eval == nil || ps[0].Eval.Reason != a.Eval.Reason {
					t.Errorf("pending = %+v", ps)
				}
				lines, err := os.ReadFile(filepath.Join(fx.store.Dir, record.FileSkillsAudit))
				if err != nil || !strings.Contains(string(lines), tc.reason) {
					t.Errorf("the audit log's pending line lacks the reason: %v", err)
				}
			}
		})
	}
}
