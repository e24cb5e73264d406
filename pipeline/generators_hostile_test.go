package pipeline

import (
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
)

// What a container of a generated manifest receives, once Kubernetes
// has expanded its command with its variables (the key a known value).
func expanded(c corev1.Container) []string {
	vars := map[string]string{"HARNESS_API_KEY": "sk-the-real-key"}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	out := make([]string, len(c.Command))
	for i, w := range c.Command {
		out[i] = kube.Expand(w, vars)
	}
	return out
}

func restricted(t *testing.T, meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	t.Helper()
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := policy.AggregateCheckResults(eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, meta, spec)); !res.Allowed {
		t.Errorf("not at the restricted level: %s", strings.Join(res.ForbiddenDetails, "; "))
	}
}

var hostileWords = []string{"$(HARNESS_API_KEY)", "$$(HARNESS_API_KEY)", "x=$(XDG_CACHE_HOME) $", `'; touch PWNED; '`}

// `batch k8s`: the batch file, the work directory and the run flags reach
// the containers as given, never a variable's value.
func TestK8sManifestCommandIsLiteral(t *testing.T) {
	o := K8sOptions{File: "batches/$(HARNESS_API_KEY).yaml", Image: "img", Shards: 2, ID: "b", Secret: "key", WorkDir: "/work/$(HARNESS_API_KEY)",
		WritableWorkspace: true, Args: append([]string{"--var"}, hostileWords...)}
	job := decodeJob(t, o)
	spec := job.Spec.Template.Spec
	restricted(t, &job.Spec.Template.ObjectMeta, &spec)
	want := append([]string{"harness", "batch", "run", o.File, "--shards", "2", "--id", "b", "--artifacts-dir", "/runs", "--jobs", "1", "--or-resume"}, o.Args...)
	if got := expanded(spec.Containers[0]); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("the container runs %q, want %q", got, want)
	}
	if got := expanded(spec.InitContainers[0]); got[2] != o.WorkDir+"/." {
		t.Errorf("the workspace copy reads %q, want %q", got[2], o.WorkDir+"/.")
	}
}

// `pipeline k8s` (an Argo Workflow): the pipeline file's path, the work
// directory and the run flags reach the containers as given; a value
// holding Argo's own template syntax is refused.
func TestArgoCommandIsLiteral(t *testing.T) {
	o := argoOptions(argoFile(t))
	o.Path, o.WorkDir, o.ID = "pipelines/$(HARNESS_API_KEY).yaml", "/work/'$(touch PWNED)'", "p-1"
	o.Args = append([]string{"--var"}, hostileWords...)
	w := decodeWorkflow(t, o)
	tpl := w.Spec.Templates[1]
	pod := corev1.PodSpec{SecurityContext: w.Spec.SecurityContext, Volumes: w.Spec.Volumes, InitContainers: tpl.InitContainers, Containers: []corev1.Container{*tpl.Container}}
	restricted(t, &metav1.ObjectMeta{}, &pod)
	want := append([]string{"harness", "pipeline", "run", o.Path, "--id", "p-1", "--phase", "{{inputs.parameters.phase}}", "--artifacts-dir", "/runs/pipelines"}, o.Args...)
	if got := expanded(*tpl.Container); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("the container runs %q, want %q", got, want)
	}
	init := expanded(tpl.InitContainers[0])
	if len(init) != 7 || init[6] != o.WorkDir || strings.Contains(init[2], o.WorkDir) {
		t.Errorf("the workspace copy runs %q: the paths must be its arguments, not its script", init)
	}
	for _, edit := range []func(*ArgoOptions){
		func(o *ArgoOptions) { o.Path = "p/{{workflow.parameters.x}}.yaml" },
		func(o *ArgoOptions) { o.Args = []string{"--model", "{{=sprig.env('X')}}"} },
		func(o *ArgoOptions) { o.WorkDir = "/work/{{workflow.name}}" },
	} {
		o := argoOptions(argoFile(t))
		edit(&o)
		if _, err := ArgoWorkflow(o); err == nil || !strings.Contains(err.Error(), "Argo") {
			t.Errorf("err = %v, want a refusal of Argo's template syntax", err)
		}
	}
}

// Kubernetes expands $(NAME) in an env value too, with the variables
// listed before it (the key among them): a base URL reaches the container
// as given, never with the key spliced into it.
func TestGeneratedEnvValuesAreLiteral(t *testing.T) {
	const base = "https://api.example/v1/$(HARNESS_API_KEY)?$$(HARNESS_API_KEY)"
	check := func(t *testing.T, env []corev1.EnvVar) {
		t.Helper()
		vars := map[string]string{}
		seen := false
		for _, e := range env {
			if e.ValueFrom != nil {
				vars[e.Name] = "sk-the-real-key"
				continue
			}
			got := kube.Expand(e.Value, vars)
			vars[e.Name] = got
			if e.Name == "HARNESS_BASE_URL" {
				seen = true
				if got != base {
					t.Errorf("the container's HARNESS_BASE_URL is %q, want %q", got, base)
				}
			}
		}
		if !seen {
			t.Error("no HARNESS_BASE_URL in the container's env")
		}
	}
	t.Run("batch k8s", func(t *testing.T) {
		job := decodeJob(t, K8sOptions{File: "b.yaml", Image: "img", Shards: 2, ID: "b", Secret: "key", WorkDir: "/work", BaseURL: base})
		check(t, job.Spec.Template.Spec.Containers[0].Env)
	})
	t.Run("pipeline k8s", func(t *testing.T) {
		o := argoOptions(argoFile(t))
		o.BaseURL = base
		check(t, decodeWorkflow(t, o).Spec.Templates[1].Container.Env)
	})
}

// `pipeline k8s`: a path, a flag or any other value holding a line break
// (a newline, a carriage return, U+2028) is refused, so it cannot end the
// header comment and start a document of its own; what is accepted comes
// out as exactly the one Workflow.
func TestArgoRefusesLineBreaksInValues(t *testing.T) {
	inject := "x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil}\n#"
	for _, edit := range []func(*ArgoOptions){
		func(o *ArgoOptions) { o.Path = "pipelines/" + inject + "/p.yaml" },
		func(o *ArgoOptions) { o.Path = "pipelines/a\rb.yaml" },
		func(o *ArgoOptions) { o.Path = "pipelines/a\u2028b.yaml" },
		func(o *ArgoOptions) { o.WorkDir = "/work/" + inject },
		func(o *ArgoOptions) { o.Args = []string{"--var", "a=\x1b[2J\x00"} },
		func(o *ArgoOptions) { o.BaseURL = "https://api.example/\u0085x" },
	} {
		o := argoOptions(argoFile(t))
		edit(&o)
		if y, err := ArgoWorkflow(o); err == nil {
			t.Errorf("accepted %+v:\n%s", o, y)
		} else if oe := outcome.As(err); oe == nil || oe.Code != "k8s_value_control" {
			t.Errorf("refused with %v, want k8s_value_control", err)
		}
	}
	o := argoOptions(argoFile(t))
	o.Path = `pipelines/# "odd": name'.yaml`
	y, err := ArgoWorkflow(o)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseBytes(y, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Docs) != 1 {
		t.Errorf("the manifest holds %d documents, want 1:\n%s", len(f.Docs), y)
	}
	if !strings.Contains(string(y), strconv.Quote(o.Path)) {
		t.Errorf("the header does not name the path quoted:\n%s", y)
	}
	decodeWorkflow(t, o)
}
