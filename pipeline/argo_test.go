package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/kube"
)

// argoSchema is Argo's published schema (testdata/argo/SOURCE), made
// strict: the published one allows any further field, so a misspelt one
// would pass. Every object that lists its properties here allows only
// those.
func argoSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile("testdata/argo/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, def := range doc["definitions"].(map[string]any) {
		d := def.(map[string]any)
		if _, ok := d["properties"]; ok && d["additionalProperties"] == nil {
			d["additionalProperties"] = false
		}
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("argo.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("argo.json#/definitions/io.argoproj.workflow.v1alpha1.Workflow")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const argoPipeline = `defaults: {model: m, workspace: ws}
phases:
  - {name: spec, prompt: "Write the spec."}
  - {name: build_api, needs: [spec], prompt: "Build."}
  - {name: ui, needs: [spec], prompt: "UI."}
  - {name: critic, needs: [build_api, ui], prompt: "Review."}
`

func argoFile(t *testing.T) *File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "product.yaml")
	if err := os.WriteFile(p, []byte(argoPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func argoOptions(f *File) ArgoOptions {
	return ArgoOptions{File: f, Path: "pipelines/product.yaml", Image: "registry.example/harness:1", Secret: "llm", RunsClaim: "harness-runs", Retries: 2,
		Args: []string{"--model", "gpt-x"}}
}

// TestArgoWorkflowPassesArgosSchema: what `pipeline k8s` prints is a
// Workflow as Argo's own schema describes one, its DAG the pipeline's
// needs.
func TestArgoWorkflowPassesArgosSchema(t *testing.T) {
	schema := argoSchema(t)
	f := argoFile(t)
	for _, tc := range []struct {
		name string
		o    func(*ArgoOptions)
	}{
		{"defaults", func(*ArgoOptions) {}},
		{"a fixed id, resources, a deadline, a base URL", func(o *ArgoOptions) {
			o.ID, o.Namespace, o.BaseURL = "product-1", "agents", "http://gateway:8080/v1"
			o.Pod = kube.Pod{CPU: "500m", Memory: "2Gi", Deadline: 3 * time.Hour}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := argoOptions(f)
			tc.o(&o)
			y, err := ArgoWorkflow(o)
			if err != nil {
				t.Fatal(err)
			}
			js, err := yaml.YAMLToJSON(y)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Fatalf("the Workflow fails Argo's schema: %v\n%s", err, y)
			}
		})
	}
	// The schema bites: a misspelt field fails it.
	y, _ := ArgoWorkflow(argoOptions(f))
	js, _ := yaml.YAMLToJSON(bytes.Replace(y, []byte("dependencies:"), []byte("depends_on:"), 1))
	if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js)); err != nil || schema.Validate(doc) == nil {
		t.Error("a Workflow with a misspelt field passed the schema")
	}
}

func TestArgoWorkflowMirrorsTheNeeds(t *testing.T) {
	w := decodeWorkflow(t, argoOptions(argoFile(t)))
	deps := map[string]string{}
	phases := map[string]string{}
	for _, task := range w.Spec.Templates[0].DAG.Tasks {
		deps[task.Name] = strings.Join(task.Dependencies, ",")
		phases[task.Name] = task.Arguments.Parameters[0].Value
	}
	want := map[string]string{"spec": "", "build-api": "spec", "ui": "spec", "critic": "build-api,ui"}
	for task, d := range want {
		if deps[task] != d {
			t.Errorf("task %s depends on %q, want %q", task, deps[task], d)
		}
	}
	if phases["build-api"] != "build_api" {
		t.Errorf("task build-api runs phase %q, want build_api", phases["build-api"])
	}
	c := w.Spec.Templates[1].Container
	cmd := strings.Join(c.Command, " ")
	if cmd != "harness pipeline run pipelines/product.yaml --id {{workflow.name}} --phase {{inputs.parameters.phase}} --artifacts-dir /runs/pipelines --model gpt-x" {
		t.Errorf("command = %s", cmd)
	}
	if w.Metadata.GenerateName != "harness-product-" {
		t.Errorf("generateName = %q", w.Metadata.GenerateName)
	}
	rs := w.Spec.Templates[1].RetryStrategy
	if rs.Limit.String() != "2" || !strings.Contains(rs.Expression, "== 4") || !strings.Contains(rs.Expression, "== 130") {
		t.Errorf("retryStrategy = %+v: want retries of an outage (4) and an interrupt (130)", rs)
	}
	if e := c.Env[0]; e.Name != "HARNESS_API_KEY" || e.Value != "" || e.ValueFrom.SecretKeyRef.Name != "llm" {
		t.Errorf("the key must come from the Secret by reference: %+v", e)
	}
}

// TestArgoPodIsRestricted: the pod every phase runs in, as Argo builds
// it from the Workflow's security context, volumes and the template's
// container, passes the restricted Pod Security level.
func TestArgoPodIsRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, tc := range []struct {
		profile string
		allowed bool
	}{{"", true}, {"unconfined", false}} {
		o := argoOptions(argoFile(t))
		o.SandboxProfile = tc.profile
		o.Pod = kube.Pod{CPU: "1", Memory: "1Gi"}
		w := decodeWorkflow(t, o)
		pod := corev1.PodSpec{SecurityContext: w.Spec.SecurityContext, Volumes: w.Spec.Volumes,
			InitContainers: w.Spec.Templates[1].InitContainers, Containers: []corev1.Container{*w.Spec.Templates[1].Container}}
		res := policy.AggregateCheckResults(eval.EvaluatePod(restricted, &metav1.ObjectMeta{}, &pod))
		if res.Allowed != tc.allowed {
			t.Errorf("profile %q: restricted level allows it: %v, want %v (%s)", tc.profile, res.Allowed, tc.allowed, strings.Join(res.ForbiddenDetails, "; "))
		}
	}
}

func TestArgoWorkflowRefuses(t *testing.T) {
	f := argoFile(t)
	for _, tc := range []struct {
		want string
		o    func(*ArgoOptions)
	}{
		{"--image IMG is required", func(o *ArgoOptions) { o.Image = "" }},
		{"--secret NAME is required", func(o *ArgoOptions) { o.Secret = "" }},
		{"--runs-claim PVC is required", func(o *ArgoOptions) { o.RunsClaim = "" }},
		{"--id \"Product_1\"", func(o *ArgoOptions) { o.ID = "Product_1" }},
		{"--sandbox-profile \"privileged\"", func(o *ArgoOptions) { o.SandboxProfile = "privileged" }},
		{"--cpu \"lots\"", func(o *ArgoOptions) { o.Pod.CPU = "lots" }},
	} {
		o := argoOptions(f)
		tc.o(&o)
		if _, err := ArgoWorkflow(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error = %v, want %q", err, tc.want)
		}
	}
}

func decodeWorkflow(t *testing.T, o ArgoOptions) argoWorkflow {
	t.Helper()
	y, err := ArgoWorkflow(o)
	if err != nil {
		t.Fatal(err)
	}
	var w argoWorkflow
	if err := yaml.UnmarshalStrict(y, &w); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return w
}

// TestCopyOnceScript runs the init container's script in a real sh, many
// pods at once: one whole copy lands, nothing half-copied is left, and a
// later pod leaves the copy the phases changed alone.
func TestCopyOnceScript(t *testing.T) {
	// Paths that are code wherever they could be pasted into the script:
	// they are its arguments.
	src, runs := filepath.Join(t.TempDir(), `ws '$(touch PWNED)'`), filepath.Join(t.TempDir(), "runs `touch PWNED`")
	testenv.WriteTree(t, src, map[string]string{"README.md": "the product\n", "skills/s/SKILL.md": "---\nname: s\n---\n"})
	script := copyOnceScript(src, filepath.Join(runs, "workspaces"), "p-1")
	defer func() {
		for _, d := range []string{filepath.Dir(src), runs, "."} {
			if m, _ := filepath.Glob(filepath.Join(d, "PWNED")); len(m) > 0 {
				t.Errorf("a path ran as code: %v", m)
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := exec.Command(script[0], script[1:]...).CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	dest := filepath.Join(runs, "workspaces", "p-1")
	if b, err := os.ReadFile(filepath.Join(dest, "skills/s/SKILL.md")); err != nil || !strings.Contains(string(b), "name: s") {
		t.Fatalf("the copy is not whole: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(runs, "workspaces", ".copy.*")); len(left) > 0 {
		t.Errorf("copies left behind: %v", left)
	}
	testenv.WriteTree(t, dest, map[string]string{"README.md": "changed by a phase\n"})
	if out, err := exec.Command(script[0], script[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "README.md")); string(b) != "changed by a phase\n" {
		t.Errorf("a later pod copied the workspace again: %q", b)
	}
}
