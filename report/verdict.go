package report

import (
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// What a reader shows about whether the records it shows verify. The
// report package reads directories for people; whether a run directory is
// still what harness wrote is decided by the one verifier (`harness
// verify`), which the caller runs and hands over as a Verdict.

// Verdict is how one run directory verified.
type Verdict struct {
	// Checked says a verifier looked; a page nobody verified says so.
	Checked bool `json:"checked"`
	OK      bool `json:"ok"`
	// Sealed says run.json carries an HMAC seal; SealChecked that the key
	// was at hand and the seal matched.
	Sealed      bool `json:"sealed"`
	SealChecked bool `json:"sealChecked"`
	// Problem is what does not verify, in `harness verify`'s words.
	Problem string `json:"problem,omitempty"`
	// JournalTurns and JournalUsage are what the verified journal counts,
	// the account of a run that never ended.
	JournalTurns int                `json:"journalTurns"`
	JournalUsage record.UsageRecord `json:"journalUsage"`
}

// Ended reports whether the run ended a segment (run.json then holds its
// exit code, turns and usage); a crashed or running one did not.
func (s *RunSummary) Ended() bool {
	return s.Status != outcome.StatusRunning && s.Status != StatusCrashed
}

// Take sets the verdict of a run and, for a run that never ended, its
// turns from the verified journal.
func (s *RunSummary) Take(v Verdict) {
	s.Verdict = &v
	if !s.Ended() && v.OK {
		s.Turns = v.JournalTurns
	}
}

// Take sets the verdict of the run shown and, for a run that never
// ended, its turns and usage from the verified journal.
func (v *RunView) Take(verd Verdict) {
	v.Verdict = verd
	v.RunSummary.Take(verd)
	if !v.Ended() && verd.OK {
		v.Usage = verd.JournalUsage
	}
}

// Words is the verdict as the header of a run shows it.
func (v Verdict) Words() string {
	switch {
	case !v.Checked:
		return "not verified"
	case !v.OK:
		return "does not verify: " + v.Problem
	case v.SealChecked:
		return "verifies; sealed, seal checked"
	case v.Sealed:
		return "verifies; sealed, seal not checked (no HARNESS_RUN_KEY)"
	}
	return "verifies; not sealed"
}

// RunPages are every run the page shows, children included.
func (p *Page) RunPages() []*RunPage {
	var out []*RunPage
	var walk func(*RunPage)
	walk = func(rp *RunPage) {
		out = append(out, rp)
		for _, c := range rp.ChildPages {
			walk(c)
		}
	}
	if p.Run != nil {
		walk(p.Run)
	}
	if p.Set != nil {
		for _, rp := range p.Set.Runs {
			walk(rp)
		}
	}
	return out
}

// Judge sets each run's verdict from verify and puts a banner line on the
// page for each that does not verify (and for problems of the page's own
// directory); it reports whether everything verified.
func (p *Page) Judge(verify func(dir string) Verdict, own []string) bool {
	p.Banner = append(p.Banner, own...)
	for _, rp := range p.RunPages() {
		rp.Verdict = verify(rp.RunDir)
		rp.RunView.Take(rp.Verdict)
		if !rp.Verdict.OK {
			p.Banner = append(p.Banner, "run "+rp.RunID+" does not verify: "+rp.Verdict.Problem)
		}
	}
	if len(p.Banner) > 0 {
		p.Status = "does not verify"
	}
	return len(p.Banner) == 0
}
