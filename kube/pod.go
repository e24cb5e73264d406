// Package kube holds what every Kubernetes manifest harness prints shares:
// how big each pod may be and how long its Job lives.
package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/harness-dev/harness/outcome"
)

// DefaultTTL keeps a finished Job a day.
const DefaultTTL = 24 * time.Hour

// Pod sizes and bounds the pods of a manifest. CPU and Memory are each
// pod's requests, and its limits unless CPULimit and MemoryLimit are both
// given (Kubernetes quantities). Deadline bounds a Job
// (activeDeadlineSeconds, 0: none); TTL is how long a finished Job is
// kept (ttlSecondsAfterFinished).
type Pod struct {
	CPU, Memory, CPULimit, MemoryLimit string
	Deadline, TTL                      time.Duration
}

// Check refuses what a cluster would refuse later, naming the flag, and
// fills in the defaults: limits from the requests, a TTL of a day.
func (p *Pod) Check() error {
	for _, q := range []struct{ flag, value string }{{"--cpu", p.CPU}, {"--memory", p.Memory}, {"--cpu-limit", p.CPULimit}, {"--memory-limit", p.MemoryLimit}} {
		if q.value == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q.value); err != nil {
			return outcome.Usage("k8s_quantity_invalid", "%s %q is not a Kubernetes quantity (such as 500m or 2 for CPU, 512Mi or 2Gi for memory)", q.flag, q.value)
		}
	}
	if (p.CPULimit == "") != (p.MemoryLimit == "") {
		return outcome.Usage("k8s_limits_partial", "give both --cpu-limit and --memory-limit, or neither (the limits are then the requests)")
	}
	if p.CPULimit == "" {
		p.CPULimit, p.MemoryLimit = p.CPU, p.Memory
	}
	if p.Deadline < 0 || p.TTL < 0 {
		return outcome.Usage("k8s_duration_invalid", "--deadline and --ttl cannot be negative")
	}
	if p.TTL == 0 {
		p.TTL = DefaultTTL
	}
	return nil
}

// Resources are the requests and limits of a checked Pod.
func (p Pod) Resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: quantities(p.CPU, p.Memory), Limits: quantities(p.CPULimit, p.MemoryLimit)}
}

// quantities is a resource list of the CPU and memory given (nil: none).
func quantities(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	if len(l) == 0 {
		return nil
	}
	return l
}
