package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/harness-dev/harness/kube"
)

// The manifest is decoded strictly into the Kubernetes API's own types: a
// misspelt or misplaced field fails here, not on a cluster.
func TestK8sManifestDecodesStrictly(t *testing.T) {
	job := decodeJob(t, K8sOptions{
		File: "batches/review.yaml", Image: "registry.example/harness:1", Shards: 4, Parallelism: 2, Jobs: 3,
		ID: "review-batch", Namespace: "agents", RunsClaim: "harness-runs", Secret: "model-key", BaseURL: "https://llm.internal/v1",
		BackoffLimitPerIndex: 2,
	})
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "review-batch" || job.Namespace != "agents" {
		t.Errorf("object = %s %s %s/%s", job.APIVersion, job.Kind, job.Namespace, job.Name)
	}
	if pf := s.PodFailurePolicy; pf == nil || len(pf.Rules) != 2 || pf.Rules[0].Action != batchv1.PodFailurePolicyActionFailIndex ||
		pf.Rules[0].OnExitCodes == nil || fmt.Sprint(pf.Rules[0].OnExitCodes.Values) != "[1 2 5 6]" {
		t.Errorf("the pod failure policy does not follow the exit contract: %+v", s.PodFailurePolicy)
	}
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 2 || *s.BackoffLimitPerIndex != 2 {
		t.Errorf("spec = %+v", s)
	}
	c := s.Template.Spec.Containers[0]
	if got := strings.Join(c.Command, " "); got != "harness batch run batches/review.yaml --shards 4 --id review-batch --artifacts-dir /runs --jobs 3 --or-resume" {
		t.Errorf("command = %s", got)
	}
	key := c.Env[0]
	if key.Name != "HARNESS_API_KEY" || key.Value != "" || key.ValueFrom == nil || key.ValueFrom.SecretKeyRef.Name != "model-key" || key.ValueFrom.SecretKeyRef.Key != "api-key" {
		t.Errorf("the key is not taken from the Secret by reference: %+v", key)
	}
	var runs *corev1.Volume
	for i, v := range s.Template.Spec.Volumes {
		if v.Name == "runs" {
			runs = &s.Template.Spec.Volumes[i]
		}
	}
	if runs == nil || runs.PersistentVolumeClaim == nil || runs.PersistentVolumeClaim.ClaimName != "harness-runs" {
		t.Errorf("the runs volume = %+v", runs)
	}
	if s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("restartPolicy = %s (Indexed Jobs with backoffLimitPerIndex need Never)", s.Template.Spec.RestartPolicy)
	}
}

func TestK8sManifestRefusals(t *testing.T) {
	ok := K8sOptions{File: "b.yaml", Image: "i", Shards: 2, ID: "b", Secret: "s"}
	for _, tc := range []struct {
		name string
		edit func(*K8sOptions)
		want string
	}{
		{"no image", func(o *K8sOptions) { o.Image = "" }, "--image"},
		{"no shards", func(o *K8sOptions) { o.Shards = 0 }, "--shards"},
		{"no secret", func(o *K8sOptions) { o.Secret = "" }, "never written into the manifest"},
		{"bad name", func(o *K8sOptions) { o.ID = "Bad_Name" }, "Kubernetes name"},
		{"name that injects YAML", func(o *K8sOptions) { o.ID = "a\nkind: Pod" }, "Kubernetes name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			if _, err := K8sManifest(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	// Values are quoted: an image or URL with YAML in it stays a string.
	o := ok
	o.Image = "x\"\nkind: Pod"
	b, err := K8sManifest(o)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := json.Unmarshal(js, &job); err != nil || job.Kind != "Job" || job.Spec.Template.Spec.Containers[0].Image != o.Image {
		t.Errorf("quoted image broke the manifest: %v %+v", err, job.Kind)
	}
}

// Every pod template harness prints passes the restricted Pod Security
// level, as the admission controller a platform team runs would judge
// it; --sandbox-profile unconfined is what it says, and fails it.
func TestK8sPodIsRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, tc := range []struct {
		name    string
		o       K8sOptions
		allowed bool
	}{
		{"defaults", K8sOptions{}, true},
		{"resources, deadline and a writable workspace", K8sOptions{Pod: kube.Pod{CPU: "500m", Memory: "2Gi", CPULimit: "2", MemoryLimit: "4Gi", Deadline: 2 * time.Hour}, WritableWorkspace: true}, true},
		{"an unconfined sandbox profile", K8sOptions{SandboxProfile: "unconfined"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.File, o.Image, o.Shards, o.ID, o.Secret = "b.yaml", "img", 2, "b", "key"
			job := decodeJob(t, o)
			res := policy.AggregateCheckResults(eval.EvaluatePod(restricted, &job.Spec.Template.ObjectMeta, &job.Spec.Template.Spec))
			if res.Allowed != tc.allowed {
				t.Errorf("restricted level allows it: %v, want %v (%s: %s)", res.Allowed, tc.allowed, strings.Join(res.ForbiddenReasons, "; "), strings.Join(res.ForbiddenDetails, "; "))
			}
			if tc.allowed && (job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != 86400) {
				t.Errorf("ttlSecondsAfterFinished = %v, want a day by default", job.Spec.TTLSecondsAfterFinished)
			}
		})
	}
	job := decodeJob(t, K8sOptions{File: "b.yaml", Image: "img", Shards: 2, ID: "b", Secret: "key", Pod: kube.Pod{CPU: "500m", Memory: "2Gi", Deadline: 2 * time.Hour}, WritableWorkspace: true})
	c := job.Spec.Template.Spec.Containers[0]
	if got := c.Resources.Limits.Memory().String(); got != "2Gi" || c.Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("resources = %+v: the requests are the limits when no limits are given", c.Resources)
	}
	if d := job.Spec.ActiveDeadlineSeconds; d == nil || *d != 7200 {
		t.Errorf("activeDeadlineSeconds = %v", d)
	}
	if ic := job.Spec.Template.Spec.InitContainers; len(ic) != 1 || strings.Join(ic[0].Command, " ") != "cp -a /work/. /workspace-copy/" {
		t.Errorf("the workspace copy: %+v", ic)
	}
}

func decodeJob(t *testing.T, o K8sOptions) batchv1.Job {
	t.Helper()
	b, err := K8sManifest(o)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var job batchv1.Job
	if err := dec.Decode(&job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v\n%s", err, b)
	}
	return job
}

// The same Indexed Job runs an eval's shards: the pod's command and the
// merge it names are the caller's.
func TestK8sManifestOtherCommand(t *testing.T) {
	job := decodeJob(t, K8sOptions{File: "skills/shout", Image: "img", Shards: 3, ID: "ev", Secret: "key",
		Command: []string{"harness", "eval"}, Merge: "harness eval merge", Args: []string{"--model=m", "--epochs=2"}})
	args := job.Spec.Template.Spec.Containers[0].Args
	if len(args) == 0 {
		args = job.Spec.Template.Spec.Containers[0].Command
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"harness eval skills/shout --shards 3 --id ev --artifacts-dir /runs", "--or-resume --model=m --epochs=2"} {
		if !strings.Contains(got, want) {
			t.Errorf("the pod runs %q, want it to hold %q", got, want)
		}
	}
}
