package record

import (
	"fmt"
	"testing"

	"github.com/harness-dev/harness/loop"
)

func TestUsageByModelAndCost(t *testing.T) {
	turns := []loop.Usage{
		{PromptTokens: 1_000_000, CompletionTokens: 100_000, TotalTokens: 1_100_000, Model: "big"},
		{PromptTokens: 500_000, CompletionTokens: 0, TotalTokens: 500_000}, // recorded before turns named a model
		{PromptTokens: 2_000_000, CompletionTokens: 1_000_000, TotalTokens: 3_000_000, Model: "nano"},
	}
	by := ByModel(turns, "big")
	if len(by) != 2 || by[0].Model != "big" || by[0].PromptTokens != 1_500_000 || by[1].Model != "nano" {
		t.Fatalf("by model = %+v", by)
	}
	total, unpriced := Priced(by, map[string]Price{"big": {In: 2, Out: 8}})
	if total == nil || fmt.Sprintf("%.2f", *total) != "3.80" || len(unpriced) != 1 || unpriced[0] != "nano" {
		t.Fatalf("cost = %v, unpriced %v; want 3.80 (1.5M in at 2, 0.1M out at 8) and nano unpriced", total, unpriced)
	}
	if by[1].Cost != nil {
		t.Error("an unpriced model has a cost")
	}
	if total, _ := Priced(by, nil); total != nil {
		t.Error("no prices, yet a cost")
	}

	// Two units' breakdowns sum by model; a model priced in one unit
	// and not in another has no cost in the sum.
	a := []ModelUsage{{Model: "big", TotalTokens: 10, Cost: ptr(1)}, {Model: "nano", TotalTokens: 1, Cost: ptr(0.5)}}
	b := []ModelUsage{{Model: "big", TotalTokens: 5, Cost: ptr(2)}, {Model: "nano", TotalTokens: 1}}
	m := MergeByModel(a, b)
	if m[0].TotalTokens != 15 || *m[0].Cost != 3 || m[1].Cost != nil {
		t.Fatalf("merged = %+v", m)
	}
	if *a[0].Cost != 1 {
		t.Error("merging changed a unit's own cost")
	}
	total, unpriced = CostOf(m)
	if *total != 3 || len(unpriced) != 1 {
		t.Errorf("CostOf = %v %v", *total, unpriced)
	}
}

func ptr(f float64) *float64 { return &f }
