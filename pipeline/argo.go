package pipeline

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
)

// ArgoOptions describe the Argo Workflow that runs a pipeline with a pod
// per phase: each runs `harness pipeline run FILE --phase NAME` against
// one pipeline directory on the claim.
type ArgoOptions struct {
	// File is the pipeline file as read here; Path is how the pods name
	// it (relative to WorkDir; "" = File as given).
	File  *File
	Path  string
	Image string
	// ID names the pipeline directory and the Workflow ("" = a new name
	// per submission: Argo's generated one).
	ID        string
	Namespace string
	WorkDir   string
	// RunsClaim is the PersistentVolumeClaim every phase mounts at /runs:
	// the pipeline directory they share.
	RunsClaim string
	// Secret and SecretKey name the API key: referenced, never inline.
	Secret, SecretKey string
	BaseURL           string
	// Retries are the further attempts of a phase whose run stopped in a
	// way a retry can continue (an outage, an interrupted pod).
	Retries int
	// Args are more flags of every phase's `harness pipeline run` (the run
	// settings the operator gave, as given).
	Args []string
	// Pod sizes each phase's pod and bounds the whole Workflow.
	kube.Pod
	SandboxProfile string
}

// The subset of Argo's Workflow (argoproj.io/v1alpha1) harness prints,
// spelled as Argo's schema spells it; the pod parts are Kubernetes' own
// types.
type (
	argoWorkflow struct {
		APIVersion string       `json:"apiVersion"`
		Kind       string       `json:"kind"`
		Metadata   argoMetadata `json:"metadata"`
		Spec       argoSpec     `json:"spec"`
	}
	argoMetadata struct {
		Name         string            `json:"name,omitempty"`
		GenerateName string            `json:"generateName,omitempty"`
		Namespace    string            `json:"namespace,omitempty"`
		Labels       map[string]string `json:"labels,omitempty"`
	}
	argoSpec struct {
		Entrypoint            string                     `json:"entrypoint"`
		ActiveDeadlineSeconds *int64                     `json:"activeDeadlineSeconds,omitempty"`
		TTLStrategy           argoTTL                    `json:"ttlStrategy"`
		SecurityContext       *corev1.PodSecurityContext `json:"securityContext"`
		Volumes               []corev1.Volume            `json:"volumes"`
		Templates             []argoTemplate             `json:"templates"`
	}
	argoTTL struct {
		SecondsAfterCompletion int32 `json:"secondsAfterCompletion"`
	}
	argoTemplate struct {
		Name           string             `json:"name"`
		Metadata       *argoMetadata      `json:"metadata,omitempty"`
		Inputs         *argoInputs        `json:"inputs,omitempty"`
		DAG            *argoDAG           `json:"dag,omitempty"`
		InitContainers []corev1.Container `json:"initContainers,omitempty"`
		Container      *corev1.Container  `json:"container,omitempty"`
		RetryStrategy  *argoRetryStrategy `json:"retryStrategy,omitempty"`
	}
	argoInputs struct {
		Parameters []argoParameter `json:"parameters"`
	}
	argoParameter struct {
		Name  string `json:"name"`
		Value string `json:"value,omitempty"`
	}
	argoDAG struct {
		Tasks []argoTask `json:"tasks"`
	}
	argoTask struct {
		Name         string     `json:"name"`
		Template     string     `json:"template"`
		Dependencies []string   `json:"dependencies,omitempty"`
		Arguments    argoInputs `json:"arguments"`
	}
	argoRetryStrategy struct {
		Limit       intstr.IntOrString `json:"limit"`
		RetryPolicy string             `json:"retryPolicy"`
		Expression  string             `json:"expression"`
	}
)

// retryable is when Argo tries a phase again: the pod was lost (Argo's
// Error), or harness said a retry can continue the run: an outage (4) or
// an interrupt (130). A failed run (1), a usage error (2, such as needs
// that did not succeed), a limit (3), a policy refusal (5) and a call
// waiting for a person (6) would end the same way again.
const retryable = `lastRetry.status == "Error" || asInt(lastRetry.exitCode) == 4 || asInt(lastRetry.exitCode) == 130`

// ArgoWorkflow prints the Workflow as YAML.
func ArgoWorkflow(o ArgoOptions) ([]byte, error) {
	switch {
	case o.Image == "":
		return nil, outcome.Usage("k8s_image_missing", "--image IMG is required: an image that holds harness, the workspace and the pipeline file")
	case o.Secret == "":
		return nil, outcome.Usage("k8s_secret_missing", "--secret NAME is required: the Secret that holds the API key (referenced, never written into the manifest)")
	case o.RunsClaim == "":
		return nil, outcome.Usage("k8s_runs_claim_missing", "--runs-claim PVC is required: the phases' pods share the pipeline directory on it (ReadWriteMany when phases run at once)")
	case !k8sName().MatchString(o.RunsClaim):
		return nil, outcome.Usage("k8s_name_invalid", "--runs-claim %q is not a valid Kubernetes name", o.RunsClaim)
	case o.ID != "" && !k8sName().MatchString(o.ID):
		return nil, outcome.Usage("k8s_name_invalid", "--id %q: a Kubernetes name is at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", o.ID)
	case o.Retries < 0:
		return nil, outcome.Usage("k8s_retries_invalid", "--retries cannot be negative")
	}
	// Argo substitutes {{...}} anywhere in a template ({{=...}} evaluates
	// an expression): a value given here is data, never that.
	for _, v := range append([]string{o.Path, o.File.Path, o.WorkDir, o.Image, o.BaseURL, o.Namespace, o.Secret, o.SecretKey}, o.Args...) {
		if strings.Contains(v, "{{") {
			return nil, outcome.Usage("argo_template_syntax", "%q holds \"{{\", which Argo would substitute or evaluate in the Workflow; give it without", v)
		}
		if err := kube.CheckText(v, false); err != nil {
			return nil, outcome.Usage("k8s_value_control", "%v; the Workflow could not carry it as given", err)
		}
	}
	if err := o.Pod.Check(); err != nil {
		return nil, err
	}
	seccomp, err := kube.Seccomp(o.SandboxProfile)
	if err != nil {
		return nil, err
	}
	if o.SecretKey == "" {
		o.SecretKey = "api-key"
	}
	if o.WorkDir == "" {
		o.WorkDir = "/work"
	}
	if o.Path == "" {
		o.Path = o.File.Path
	}
	tasks, err := argoTasks(o.File)
	if err != nil {
		return nil, err
	}
	meta := argoMetadata{Name: o.ID, Namespace: o.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "harness-pipeline"}}
	id := o.ID
	if id == "" {
		// Each submission its own pipeline directory, named as Argo
		// names the Workflow.
		meta.GenerateName, id = "harness-"+argoStem(o.File.Path)+"-", "{{workflow.name}}"
	}
	argv := []string{"harness", "pipeline", "run", o.Path, "--id", id, "--phase", "{{inputs.parameters.phase}}", "--artifacts-dir", "/runs/pipelines"}
	argv = append(argv, o.Args...)
	volumes, mounts := kube.Volumes(o.RunsClaim)
	// Phases hand each other the workspace, as they do in one process:
	// the image's is copied onto the claim once per pipeline (the first
	// copy to land wins; a phase's pod finds it there), and every phase
	// works in that copy.
	shared := "/runs/workspaces/" + id
	copyOnce := copyOnceScript(o.WorkDir, "/runs/workspaces", id)
	w := argoWorkflow{
		APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Metadata: meta,
		Spec: argoSpec{
			Entrypoint:      "pipeline",
			TTLStrategy:     argoTTL{SecondsAfterCompletion: int32(o.TTL.Seconds())},
			SecurityContext: kube.PodSecurity(seccomp),
			Volumes:         volumes,
			Templates: []argoTemplate{
				{Name: "pipeline", DAG: &argoDAG{Tasks: tasks}},
				{
					Name:     "phase",
					Metadata: &argoMetadata{Labels: map[string]string{"app.kubernetes.io/name": "harness-pipeline"}},
					Inputs:   &argoInputs{Parameters: []argoParameter{{Name: "phase"}}},
					RetryStrategy: &argoRetryStrategy{
						Limit: intstr.FromString(strconv.Itoa(o.Retries)), RetryPolicy: "Always", Expression: retryable,
					},
					InitContainers: []corev1.Container{{
						Name: "workspace", Image: o.Image, Command: kube.Argv(copyOnce), VolumeMounts: mounts,
						SecurityContext: kube.ContainerSecurity(), Resources: o.Resources(),
					}},
					Container: &corev1.Container{
						Name: "harness", Image: o.Image, WorkingDir: shared, Command: kube.Argv(argv),
						Env: kube.Env(o.Secret, o.SecretKey, o.BaseURL), VolumeMounts: mounts,
						SecurityContext: kube.ContainerSecurity(), Resources: o.Resources(),
					},
				},
			},
		},
	}
	if o.Deadline > 0 {
		d := int64(o.Deadline.Seconds())
		w.Spec.ActiveDeadlineSeconds = &d
	}
	y, err := yaml.Marshal(w)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# An Argo Workflow that runs the pipeline %s with a pod per phase, in the\n"+
		"# order of its needs: each runs harness pipeline run %s --phase NAME in the\n"+
		"# workspace %s, against the pipeline directory /runs/pipelines/%s\n"+
		"# (both on the claim %s).\n", quote(o.Path), quote(o.Path), quote(shared), quote(id), quote(o.RunsClaim))
	return append([]byte(head), y...), nil
}

// argoTasks are the DAG's tasks: one per phase, its dependencies its
// needs. A task name is the phase's with '_' made '-' (Argo's names take
// no '_'); the phase's own name is the task's argument.
func argoTasks(f *File) ([]argoTask, error) {
	taskOf := map[string]string{}
	used := map[string]string{}
	for _, ph := range f.Phases {
		t := strings.ReplaceAll(ph.Name, "_", "-")
		if other, ok := used[t]; ok {
			return nil, outcome.Usage("k8s_name_invalid", "phases %s and %s both make the Argo task name %q: rename one", other, ph.Name, t)
		}
		used[t], taskOf[ph.Name] = ph.Name, t
	}
	var tasks []argoTask
	for _, n := range order(f.Phases) {
		ph := f.phase(n)
		t := argoTask{Name: taskOf[n], Template: "phase", Arguments: argoInputs{Parameters: []argoParameter{{Name: "phase", Value: n}}}}
		for _, need := range ph.Needs {
			t.Dependencies = append(t.Dependencies, taskOf[need])
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// argoStem is the pipeline file's name as a part of a Kubernetes name.
func argoStem(path string) string {
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var b strings.Builder
	for _, r := range strings.ToLower(stem) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	if s == "" {
		s = "pipeline"
	}
	return s
}

// copyOnceScript is the command that copies src to dir/name unless it
// is there: into a fresh directory beside it first, renamed into place,
// so that pods starting at once neither see half a copy nor mix two (the
// rename of the later one fails on the directory that landed, and its
// copy is removed). The paths are the script's arguments, never its text.
func copyOnceScript(src, dir, name string) []string {
	const script = `set -e; [ -e "$1" ] && exit 0; mkdir -p "$2"; tmp=$(mktemp -d "$2/.copy.XXXXXX"); cp -a "$3/." "$tmp"/; mv -T "$tmp" "$1" 2>/dev/null || rm -rf "$tmp"`
	return []string{"sh", "-c", script, "sh", dir + "/" + name, dir, src}
}
