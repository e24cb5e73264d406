package kube

import (
	"strings"
	"testing"
	"time"
)

func TestPodCheck(t *testing.T) {
	tests := []struct {
		name string
		pod  Pod
		err  string
		want Pod
	}{
		{"nothing: a day's TTL", Pod{}, "", Pod{TTL: DefaultTTL}},
		{"requests are the limits", Pod{CPU: "500m", Memory: "2Gi"}, "", Pod{CPU: "500m", Memory: "2Gi", CPULimit: "500m", MemoryLimit: "2Gi", TTL: DefaultTTL}},
		{"both limits given", Pod{CPU: "1", CPULimit: "2", MemoryLimit: "4Gi", TTL: time.Hour}, "", Pod{CPU: "1", CPULimit: "2", MemoryLimit: "4Gi", TTL: time.Hour}},
		{"one limit only", Pod{CPULimit: "2"}, "give both --cpu-limit and --memory-limit", Pod{}},
		{"not a quantity", Pod{Memory: "lots"}, `--memory "lots" is not a Kubernetes quantity`, Pod{}},
		{"a negative deadline", Pod{Deadline: -time.Second}, "cannot be negative", Pod{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pod
			err := p.Check()
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Check = %v, want %q", err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case p != tt.want:
				t.Errorf("Check made %+v, want %+v", p, tt.want)
			}
		})
	}
}
