package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop/looptest"
)

// chromium finds the browser the tools task installs (Debian's chromium).
func chromium() (string, error) {
	if p := os.Getenv("HARNESS_CHROMIUM"); p != "" {
		return p, nil
	}
	var err error
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		var p string
		if p, err = exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", err
}

// reportFixture runs harness against a scripted server so that the run
// has what a reviewer looks for: a tool call whose output carries markup
// and a script, a denied write, and a subagent.
func reportFixture(t *testing.T) (runDir string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	testenv.WriteTree(t, ws, map[string]string{
		"evil.txt": "<script>window.__pwned = 1; console.error('pwned')</script><img src=x onerror=\"window.__pwned = 2\"><b>bold?</b>\n",
	})
	testenv.WriteTree(t, dir, map[string]string{"profiles.yaml": "profiles:\n  - name: helper\n    description: answers briefly\n    maxTurns: 2\n"})
	srv := looptest.New([]looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "r1", Name: "read_file", Arguments: `{"path": "evil.txt"}`}}},
		{ToolCalls: []looptest.Call{{ID: "w1", Name: "write_file", Arguments: `{"path": "out.txt", "content": "window.__pwned = 1; console.error('pwned')"}`}}},
		{ToolCalls: []looptest.Call{{ID: "d1", Name: "delegate_task", Arguments: `{"profile": "helper", "task": "say hello"}`}}},
		{Content: "hello from the child"},
		{Content: "done: read it, could not write, asked the helper"},
	})
	t.Cleanup(srv.Close)
	t.Setenv("HARNESS_API_KEY", "sk-test")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"harness", "run", "--workspace", ws, "--model", "m", "--base-url", srv.URL,
		"--prompt", "read evil.txt, write out.txt, ask the helper",
		"--cfc-mode", "enforce-strict", "--allow-tool", "write_file", "--allow-tool", "delegate_task", "--profiles", filepath.Join(dir, "profiles.yaml"),
		"--artifacts-dir", filepath.Join(dir, "runs"), "--run-id", "r1"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("fixture run exited %d: %s", code, stderr.String())
	}
	return filepath.Join(dir, "runs", "r1")
}

// page is a report opened in headless Chromium from file:// with the
// network off; it remembers every request and console message until close.
type page struct {
	t        *testing.T
	ctx      context.Context
	mu       sync.Mutex
	urls     []string
	messages []string
	stop     func()
	done     chan struct{}
}

// openReport writes the report of dir with `harness report` and opens it.
func openReport(t *testing.T, dir string, flags ...string) *page {
	t.Helper()
	chrome, err := chromium()
	testenv.Need(t, "chromium (Debian package chromium)", err)
	out := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"harness", "report", dir, "-o", out}, flags...), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("report exited %d: %s", code, stderr.String())
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.Flag("disable-gpu", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	p := &page{t: t, ctx: ctx, done: make(chan struct{}, 2)}
	events, stop := context.WithCancel(ctx)
	p.stop = stop
	requests, console := chromedp.Events(events, network.RequestWillBeSent), chromedp.Console(events)
	go func() {
		defer func() { p.done <- struct{}{} }()
		for ev, err := range requests {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.urls = append(p.urls, ev.Request.URL)
			p.mu.Unlock()
		}
	}()
	go func() {
		defer func() { p.done <- struct{}{} }()
		for m, err := range console {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.messages = append(p.messages, fmt.Sprintf("%+v", m))
			p.mu.Unlock()
		}
	}()
	p.step("enable network events", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{})
		return err
	}))
	p.step("take the network offline", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
		return err
	}))
	p.step("open the report", chromedp.Navigate("file://"+out))
	p.step("wait for the header", chromedp.WaitVisible(chromedp.CSS("h1")))
	return p
}

// do does one browser action under its own deadline, so that a browser
// that stops answering fails the test with the step's name instead of
// hanging it.
func do[T any](p *page, name string, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.t.Fatalf("%s: %v", name, err)
	}
	return v
}

func (p *page) step(name string, a chromedp.Action[chromedp.Void]) { p.t.Helper(); do(p, name, a) }

// text is what the page shows, as a reader sees it.
func (p *page) text() string { return do(p, "read the page", chromedp.Text(chromedp.CSS("body"))) }

// close checks that nothing left the page and nothing was logged.
func (p *page) close() {
	t := p.t
	t.Helper()
	p.stop()
	<-p.done
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.urls {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("the report requested %s", u)
		}
	}
	if len(p.urls) == 0 {
		t.Error("no request seen at all: the network events were not observed")
	}
	for _, m := range p.messages {
		t.Errorf("console: %s", m)
	}
}

// TestReportInBrowser opens a run's report in headless Chromium from
// file:// with the network off and checks what a reviewer must see, that
// nothing was requested, that the console stayed clean and that the
// markup and script from a tool output stayed text.
func TestReportInBrowser(t *testing.T) {
	p := openReport(t, reportFixture(t))
	body := p.text()
	for _, want := range []string{
		"harness run r1", "status", "Timeline", // the header and the timeline
		"read_file", "evil.txt", // a tool call with its arguments
		"deny", "write_file", "argument_from_context", // the denied write
		"Subagent", "hello from the child", // the child's section
		"<script>window.__pwned", // the tool output, as text
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if do(p, "look for the script's effect", chromedp.Evaluate[bool](`typeof window.__pwned !== "undefined"`)) {
		t.Error("markup from a tool output ran in the report")
	}
	// The delegate_task call links to the child's own section.
	href := do(p, "find the child link", chromedp.Evaluate[string](`document.querySelector("#run-call-d1 a").getAttribute("href")`))
	if !do(p, "follow the child link", chromedp.Evaluate[bool](`document.querySelector(`+strconv.Quote(href)+`) !== null && document.querySelector(`+strconv.Quote(href)+`).textContent.includes("hello from the child")`)) {
		t.Errorf("the child link %q does not lead to the child's section", href)
	}
	shot := do(p, "take a screenshot", chromedp.FullScreenshot(100))
	png := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", png)
	// docs/report.md: the README's example screenshot is regenerated by
	// naming a file here.
	if keep := os.Getenv("HARNESS_REPORT_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.close()
}

// TestTamperedReportInBrowser: a run whose answer was replaced after it
// ended is reported under a banner that a reader sees first, above the
// fold, naming what does not verify.
func TestTamperedReportInBrowser(t *testing.T) {
	dir := reportFixture(t)
	for _, f := range []string{"journal.jsonl", "result.json"} {
		p := filepath.Join(dir, f)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte("done: read it"), []byte("all fine, nothing")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := openReport(t, dir, "--allow-unverified")
	banner := do(p, "read the banner", chromedp.Evaluate[map[string]any](`(() => {
		const b = document.querySelector("#unverified");
		if (!b) return {};
		const r = b.getBoundingClientRect();
		const first = document.body.firstElementChild === b;
		return {text: b.textContent, top: r.top, bottom: r.bottom, height: window.innerHeight, first: first, visible: r.height > 0};
	})()`))
	text, _ := banner["text"].(string)
	if !strings.Contains(text, "does not verify") || !strings.Contains(text, "run_dir_tampered") {
		t.Fatalf("no banner naming what does not verify: %v", banner)
	}
	if first, _ := banner["first"].(bool); !first {
		t.Error("the banner is not the first thing on the page")
	}
	bottom, _ := banner["bottom"].(float64)
	height, _ := banner["height"].(float64)
	if visible, _ := banner["visible"].(bool); !visible || bottom > height {
		t.Errorf("the banner is not visible above the fold: %v", banner)
	}
	p.close()
}

// TestPipelineReportInBrowser opens the report of the example pipeline:
// the phase table, the dependency graph and a section per phase run.
func TestPipelineReportInBrowser(t *testing.T) {
	dir, _ := runPipelineExample(t)
	p := openReport(t, dir)
	body := p.text()
	for _, want := range []string{"harness pipeline example", "Dependencies", "Phases", "spec", "api", "tests", "build", "critic", "succeeded", "RFC 4180", "bash csv/export_test.sh"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	nodes := do(p, "count graph nodes", chromedp.Evaluate[int](`document.querySelectorAll("svg.graph g.node").length`))
	arrows := do(p, "count graph arrows", chromedp.Evaluate[int](`document.querySelectorAll("svg.graph line").length`))
	if nodes != 5 || arrows != 5 {
		t.Errorf("the graph has %d phases and %d arrows, want 5 of each", nodes, arrows)
	}
	broken := do(p, "follow the phase links", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#units a")].map(a => a.getAttribute("href")).filter(h => !document.querySelector(h))`))
	links := do(p, "count the phase links", chromedp.Evaluate[int](`document.querySelectorAll("#units a").length`))
	if links != 5 || len(broken) > 0 {
		t.Errorf("%d phase links, broken: %v", links, broken)
	}
	p.close()
}

// A batch's report is an index of its tasks whose links open each task's
// own page, which links back; a task whose run does not verify is
// bannered on its page and on the index.
func TestBatchReportInBrowser(t *testing.T) {
	srv := looptest.New([]looptest.Reply{{Content: "answer one"}, {Content: "answer two"}, {Content: "answer three"}})
	defer srv.Close()
	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, "ws"), 0o755)
	os.WriteFile(filepath.Join(work, "ws", "a.txt"), []byte("a"), 0o644)
	file := filepath.Join(work, "batch.yaml")
	os.WriteFile(file, []byte("defaults: {model: m, workspace: ws}\ntask: {prompt: \"Do {{ .task.id }}.\"}\ntasks:\n  - id: one\n  - id: two\n  - id: three\n"), 0o644)
	t.Setenv("HARNESS_API_KEY", "sk-test")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"harness", "batch", "run", file, "--base-url", srv.URL, "--artifacts-dir", filepath.Join(work, "batches"), "--id", "b", "--quiet"},
		strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("batch exited %d: %s", code, stderr.String())
	}
	dir := filepath.Join(work, "batches", "b")
	journal := filepath.Join(dir, "batch", "two", "journal.jsonl")
	b, _ := os.ReadFile(journal)
	os.WriteFile(journal, bytes.Replace(b, []byte("answer two"), []byte("forged two"), 1), 0o644)

	p := openReport(t, dir, "--allow-unverified")
	body := p.text()
	for _, want := range []string{"Tasks", "one", "two", "three", "run two does not verify"} {
		if !strings.Contains(body, want) {
			t.Errorf("the index does not show %q", want)
		}
	}
	if strings.Contains(body, "answer one") {
		t.Error("the index holds a task's run: it should link to the task's page")
	}
	links := do(p, "read the task links", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#units a")].map(a => a.href)`))
	if len(links) != 3 {
		t.Fatalf("%d task links, want 3", len(links))
	}
	p.step("open task one", chromedp.Navigate(links[0]))
	p.step("wait for its header", chromedp.WaitVisible(chromedp.CSS("h1")))
	if page := p.text(); !strings.Contains(page, "answer one") || !strings.Contains(page, "all tasks") || strings.Contains(page, "does not verify") {
		t.Errorf("task one's page: %.300s", page)
	}
	p.step("go back to the index", chromedp.Click(chromedp.CSS(`a[href$=".html"]`)))
	p.step("wait for the task table", chromedp.WaitVisible(chromedp.CSS("#units")))
	p.step("open task two", chromedp.Navigate(links[1]))
	p.step("wait for its header", chromedp.WaitVisible(chromedp.CSS("h1")))
	if page := p.text(); !strings.Contains(page, "does not verify") {
		t.Errorf("task two's page does not say its run does not verify: %.300s", page)
	}
	p.close()
}

// TestEvalReportInBrowser opens an eval's page: with- and without-skill
// answers, an expectation's evidence and a skill's eval name that carry
// markup and script stay text, nothing is requested and the console
// stays clean.
func TestEvalReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	evil := `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`
	testenv.WriteTree(t, dir, map[string]string{
		"skills/shout/SKILL.md": "---\nname: shout\ndescription: Answers in capital letters. Use when asked to shout.\n---\nShout.\n",
		"skills/shout/evals/evals.yaml": "evals:\n  - id: 1\n    eval_name: '" + strings.ReplaceAll(evil, "'", "''") + "'\n    prompt: Shout hello\n" +
			"    expectations: [The answer shouts]\n    checks:\n      - answer-contains: HELLO\n",
	})
	srv := looptest.New([]looptest.Reply{
		{Content: "HELLO " + evil},
		{Content: "hello " + evil},
		{Content: `{"expectations": [{"text": "The answer shouts", "passed": true, "evidence": ` + strconv.Quote("HELLO "+evil) + `}]}`},
		{Content: `{"expectations": [{"text": "The answer shouts", "passed": false, "evidence": ` + strconv.Quote("hello "+evil) + `}]}`},
	})
	t.Cleanup(srv.Close)
	t.Setenv("HARNESS_API_KEY", "sk-test")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"harness", "eval", filepath.Join(dir, "skills/shout"), "--model", "m", "--epochs", "1", "--base-url", srv.URL,
		"--grader-model", "judge", "--artifacts-dir", filepath.Join(dir, "evals"), "--id", "e1", "--quiet"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr.String())
	}
	p := openReport(t, filepath.Join(dir, "evals", "e1"))
	body := p.text()
	for _, want := range []string{"with_skill", "without_skill", "The answer shouts", "<script>window.__pwned"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if do(p, "look for the script's effect", chromedp.Evaluate[bool](`typeof window.__pwned !== "undefined"`)) {
		t.Error("markup from an answer or evidence ran in the eval report")
	}
	p.close()
}
