package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// The manifest is decoded strictly into the Kubernetes API's own types: a
// misspelt or misplaced field fails here, not on a cluster.
func TestK8sManifestDecodesStrictly(t *testing.T) {
	b, err := K8sManifest(K8sOptions{
		File: "batches/review.yaml", Image: "registry.example/harness:1", Shards: 4, Parallelism: 2, Jobs: 3,
		ID: "review-batch", Namespace: "agents", RunsClaim: "harness-runs", Secret: "model-key", BaseURL: "https://llm.internal/v1",
		BackoffLimitPerIndex: 2,
	})
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
	if v := s.Template.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "harness-runs" {
		t.Errorf("volume = %+v", v)
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
