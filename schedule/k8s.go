package schedule

import (
	"bytes"
	"fmt"
	"regexp"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
)

// K8sOptions are what `harness schedule k8s` needs beyond the schedules.
type K8sOptions struct {
	Image, Secret, SecretKey, RunsClaim, Namespace, WorkDir string
	// SkillsRoots are the roots as the image holds them, relative to
	// WorkDir; Args are more flags of every `harness run` (as given).
	SkillsRoots []string
	Args        []string
	// Pod sizes each pod and bounds each scheduled run's Job.
	kube.Pod
}

var k8sName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$`)

// K8s prints one batch/v1 CronJob per scheduled skill, each pod at the
// restricted Pod Security level, the key referenced from a Secret.
func K8s(entries []*Entry, o K8sOptions) ([]byte, error) {
	switch {
	case o.Image == "":
		return nil, outcome.Usage("k8s_image_missing", "--image IMG is required: an image that holds harness, the workspace and its skills")
	case o.Secret == "":
		return nil, outcome.Usage("k8s_secret_missing", "--secret NAME is required: the Secret that holds the API key (referenced, never written into the manifest)")
	case len(entries) == 0:
		return nil, outcome.Usage("schedule_none", "no skill under the roots declares a schedule (metadata.harness.schedule)")
	}
	if o.SecretKey == "" {
		o.SecretKey = "api-key"
	}
	if o.WorkDir == "" {
		o.WorkDir = "/work"
	}
	if err := checkText(entries, o.SkillsRoots, o.Args); err != nil {
		return nil, err
	}
	if err := o.Pod.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i, e := range entries {
		if err := e.check(); err != nil {
			return nil, err
		}
		name := "harness-" + e.Skill
		if !k8sName.MatchString(name) {
			return nil, outcome.Usage("k8s_name_invalid", "skill %s makes the CronJob name %q, which Kubernetes refuses (at most 52 lowercase letters, digits and '-')", e.Skill, name)
		}
		cj := cronJob(e, name, o)
		y, err := yaml.Marshal(cj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# skill %s at %s (%s)\n", e.Skill, e.Cron, e.Timezone)
		b.Write(y)
	}
	return b.Bytes(), nil
}

func cronJob(e *Entry, name string, o K8sOptions) *batchv1.CronJob {
	starting := int64(300)
	keep := int32(3)
	argv := []string{"harness", "run", "--workspace", o.WorkDir}
	for _, r := range o.SkillsRoots {
		argv = append(argv, "--skills-root", r)
	}
	argv = append(argv, "--skill", e.Skill, "--prompt", e.Prompt, "--artifacts-dir", "/runs/"+e.Skill, "--result-file", "/runs/"+e.Skill+"/last-result.json")
	argv = append(argv, o.Args...)
	labels := map[string]string{"app.kubernetes.io/name": "harness-schedule", "app.kubernetes.io/instance": name}
	volumes, mounts := kube.Volumes(o.RunsClaim)
	c := corev1.Container{
		Name: "harness", Image: o.Image, WorkingDir: o.WorkDir, Command: kube.Argv(argv),
		Env: kube.Env(o.Secret, o.SecretKey, ""), VolumeMounts: mounts, SecurityContext: kube.ContainerSecurity(),
		Resources: o.Resources(),
	}
	ttl := int32(o.TTL.Seconds())
	var deadline *int64
	if o.Deadline > 0 {
		d := int64(o.Deadline.Seconds())
		deadline = &d
	}
	return &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: batchv1.CronJobSpec{
			Schedule: e.Cron, TimeZone: &e.Timezone,
			// A run still going when the next is due is not doubled.
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    &starting,
			SuccessfulJobsHistoryLimit: &keep, FailedJobsHistoryLimit: &keep,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: batchv1.JobSpec{
					BackoffLimit: new(int32), ActiveDeadlineSeconds: deadline, TTLSecondsAfterFinished: &ttl,
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{
							RestartPolicy:   corev1.RestartPolicyNever,
							SecurityContext: kube.PodSecurity(corev1.SeccompProfileTypeRuntimeDefault),
							Containers:      []corev1.Container{c},
							Volumes:         volumes,
						},
					},
				},
			},
		},
	}
}
