package pipeline

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
)

// K8sOptions describe the Indexed Job that runs a batch on Kubernetes:
// one pod per shard, each running `harness batch run FILE --shards N`,
// which picks its shard from JOB_COMPLETION_INDEX.
type K8sOptions struct {
	File        string // the batch file's path inside the image, relative to WorkDir
	Image       string
	Shards      int
	Parallelism int // 0 = Shards
	Jobs        int // tasks at once inside a pod
	ID          string
	Namespace   string
	WorkDir     string // where the image holds the workspace and the batch file
	// RunsClaim is the PersistentVolumeClaim mounted at /runs for the run
	// directories, so they outlive the pods and can be merged.
	RunsClaim string
	// Secret and SecretKey name the API key: referenced, never inline.
	Secret    string
	SecretKey string
	BaseURL   string
	// BackoffLimitPerIndex is the retries of one shard's pod.
	BackoffLimitPerIndex int
	// Args are more flags of every pod's `harness batch run` (the run
	// settings the operator gave, as given).
	Args []string
	// Command is what each pod runs before FILE ("" = harness batch run;
	// `harness eval` runs an eval's cells the same way), and Merge the
	// command that merges the shards afterwards.
	Command []string
	Merge   string
	// Pod sizes each pod and bounds the whole Job.
	kube.Pod
	// SandboxProfile is the pod's seccomp profile: RuntimeDefault (the
	// restricted level), or Unconfined where a cluster allows it so that
	// bwrap can make its user namespace.
	SandboxProfile string
	// WritableWorkspace copies the image's workspace onto an emptyDir
	// first: the root file system is read-only.
	WritableWorkspace bool
}

// Compiled on first use: a bounded repetition compiles to one
// instruction per repeat, which every start would otherwise pay for.
var k8sName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
})

// K8sManifest prints the Indexed Job as YAML.
func K8sManifest(o K8sOptions) ([]byte, error) {
	switch {
	case o.Image == "":
		return nil, outcome.Usage("k8s_image_missing", "--image IMG is required: an image that holds harness and the workspace")
	case o.Shards < 1:
		return nil, outcome.Usage("k8s_shards_invalid", "--shards must be at least 1")
	case o.Secret == "":
		return nil, outcome.Usage("k8s_secret_missing", "--secret NAME is required: the Secret that holds the API key (it is referenced, never written into the manifest)")
	case !k8sName().MatchString(o.ID):
		return nil, outcome.Usage("k8s_name_invalid", "--id %q: a Kubernetes name is at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", o.ID)
	case o.RunsClaim != "" && !k8sName().MatchString(o.RunsClaim):
		return nil, outcome.Usage("k8s_name_invalid", "--runs-claim %q is not a valid Kubernetes name", o.RunsClaim)
	}
	if err := o.checkResources(); err != nil {
		return nil, err
	}
	if o.Parallelism <= 0 || o.Parallelism > o.Shards {
		o.Parallelism = o.Shards
	}
	if o.SecretKey == "" {
		o.SecretKey = "api-key"
	}
	if o.WorkDir == "" {
		o.WorkDir = "/work"
	}
	if o.Command == nil {
		o.Command, o.Merge = []string{"harness", "batch", "run"}, "harness batch merge"
	}
	args := append(slices.Clone(o.Command), o.File, "--shards", strconv.Itoa(o.Shards), "--id", o.ID,
		"--artifacts-dir", "/runs", "--jobs", strconv.Itoa(max(o.Jobs, 1)), "--or-resume")
	args = append(args, o.Args...)
	var b bytes.Buffer
	err := k8sTemplate().Execute(&b, map[string]any{"o": o, "args": kube.Argv(args), "uid": kube.ImageUID, "command": strings.Join(o.Command, " "),
		"deadline": int64(o.Deadline.Seconds()), "ttl": int64(o.TTL.Seconds())})
	return b.Bytes(), err
}

// checkResources refuses what a cluster would refuse later, and fills in
// the defaults of the pod and sandbox settings.
func (o *K8sOptions) checkResources() error {
	if err := o.Pod.Check(); err != nil {
		return err
	}
	seccomp, err := kube.Seccomp(o.SandboxProfile)
	o.SandboxProfile = string(seccomp)
	return err
}

// quote writes s as a YAML double-quoted scalar (JSON string syntax is a
// subset YAML accepts).
func quote(s string) string { return strconv.Quote(s) }

// Parsed on first use, like k8sName: only `batch k8s` needs it.
var k8sTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("job").Funcs(template.FuncMap{"q": quote, "lit": kube.Literal, "join": strings.Join}).Parse(`# An Indexed Job that runs harness shards: pod I runs
# "{{.command}} ... --shards {{.o.Shards}}", which reads JOB_COMPLETION_INDEX
# and runs shard I/{{.o.Shards}} into /runs/{{.o.ID}}-shard-I.
# Afterwards: {{.o.Merge}} /runs/{{.o.ID}}-shard-* --out /runs/{{.o.ID}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{q .o.ID}}
{{- if .o.Namespace}}
  namespace: {{q .o.Namespace}}
{{- end}}
  labels:
    app.kubernetes.io/name: harness-batch
    app.kubernetes.io/instance: {{q .o.ID}}
spec:
  completionMode: Indexed
  completions: {{.o.Shards}}
  parallelism: {{.o.Parallelism}}
  backoffLimitPerIndex: {{.o.BackoffLimitPerIndex}}
  ttlSecondsAfterFinished: {{.ttl}}
{{- if .deadline}}
  activeDeadlineSeconds: {{.deadline}}
{{- end}}
  # harness's exit contract decides what a retry can help: an outage (4)
  # or an interrupt (130) resumes in a retried pod (--or-resume); a
  # failed task (1), a usage error (2), a policy refusal (5) or a call
  # waiting for a person (6) would end the same way again.
  podFailurePolicy:
    rules:
      - action: FailIndex
        onExitCodes:
          containerName: harness
          operator: In
          values: [1, 2, 5, 6]
      - action: Ignore
        onPodConditions:
          - type: DisruptionTarget
  template:
    metadata:
      labels:
        app.kubernetes.io/name: harness-batch
        app.kubernetes.io/instance: {{q .o.ID}}
    spec:
      restartPolicy: Never
      # The restricted Pod Security level: the image's own unprivileged
      # user, no way to gain privileges, a read-only root file system.
      securityContext:
        runAsNonRoot: true
        runAsUser: {{.uid}}
        runAsGroup: {{.uid}}
        fsGroup: {{.uid}}
        seccompProfile:
          # RuntimeDefault refuses the user namespace bwrap needs, so
          # harness's sandbox falls back to Landlock; Unconfined
          # (--sandbox-profile unconfined) lets bwrap start, and is not
          # the restricted level.
          type: {{.o.SandboxProfile}}
{{- if .o.WritableWorkspace}}
      initContainers:
        # The root file system is read-only: the workspace the tasks
        # write is a copy of the image's, on an emptyDir.
        - name: workspace
          image: {{q .o.Image}}
          command: ["cp", "-a", {{q (lit (printf "%s/." .o.WorkDir))}}, "/workspace-copy/"]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
{{- template "resources" .o}}
          volumeMounts:
            - name: workspace
              mountPath: /workspace-copy
{{- end}}
      containers:
        - name: harness
          image: {{q .o.Image}}
          workingDir: {{q .o.WorkDir}}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
{{- template "resources" .o}}
          command:
{{- range .args}}
            - {{q .}}
{{- end}}
          env:
            - name: HARNESS_API_KEY
              valueFrom:
                secretKeyRef:
                  name: {{q .o.Secret}}
                  key: {{q .o.SecretKey}}
{{- if .o.BaseURL}}
            - name: HARNESS_BASE_URL
              value: {{q (lit .o.BaseURL)}}
{{- end}}
            - name: XDG_CACHE_HOME
              value: /tmp/cache
          volumeMounts:
            - name: runs
              mountPath: /runs
            - name: tmp
              mountPath: /tmp
{{- if .o.WritableWorkspace}}
            - name: workspace
              mountPath: {{q .o.WorkDir}}
{{- end}}
      volumes:
        - name: tmp
          emptyDir: {}
{{- if .o.WritableWorkspace}}
        - name: workspace
          emptyDir: {}
{{- end}}
        - name: runs
{{- if .o.RunsClaim}}
          persistentVolumeClaim:
            claimName: {{q .o.RunsClaim}}
{{- else}}
          # No --runs-claim: run directories vanish with the pod.
          emptyDir: {}
{{- end}}
{{define "resources"}}
{{- if or .CPU .Memory .CPULimit}}
          resources:
{{- if or .CPU .Memory}}
            requests:
{{- if .CPU}}
              cpu: {{q .CPU}}
{{- end}}
{{- if .Memory}}
              memory: {{q .Memory}}
{{- end}}
{{- end}}
{{- if or .CPULimit .MemoryLimit}}
            limits:
{{- if .CPULimit}}
              cpu: {{q .CPULimit}}
{{- end}}
{{- if .MemoryLimit}}
              memory: {{q .MemoryLimit}}
{{- end}}
{{- end}}
{{- end}}
{{- end}}
`))
})

// shardID is the directory id of one shard's run of a batch.
func shardID(id string, sh Shard) string {
	return fmt.Sprintf("%s-shard-%d", id, sh.Index)
}
