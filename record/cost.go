package record

import (
	"cmp"
	"math"
	"slices"

	"github.com/harness-dev/harness/loop"
)

// ModelUsage is the tokens one model spent, and what they cost when the
// operator gave its price (--price MODEL=IN/OUT per million tokens). A
// cost is rounded to a millionth of the price's unit (CostPrecision), at
// every sum, so that no artifact carries a binary fraction's noise
// (0.09999999999999999).
type ModelUsage struct {
	Model            string   `json:"model"`
	PromptTokens     int64    `json:"promptTokens"`
	CompletionTokens int64    `json:"completionTokens"`
	CachedTokens     int64    `json:"cachedTokens"`
	ReasoningTokens  int64    `json:"reasoningTokens"`
	TotalTokens      int64    `json:"totalTokens"`
	Cost             *float64 `json:"cost,omitempty"`
}

// ModelCosts is a result's usage per model, sorted by model, and its
// cost: Cost is the total over the models the operator priced (--price),
// Unpriced the models used without a price, which Cost does not count.
type ModelCosts struct {
	UsageByModel []ModelUsage `json:"usageByModel,omitempty"`
	Cost         *float64     `json:"cost,omitempty"`
	Unpriced     []string     `json:"unpriced,omitempty"`
}

// ByModel sums usages by the model each names (unnamed: an entry of a
// run recorded before usage named its model, counted under that run's
// model), sorted by model.
func ByModel(us []loop.Usage, unnamed string) []ModelUsage {
	var out []ModelUsage
	for _, u := range us {
		m := cmp.Or(u.Model, unnamed)
		out = add(out, ModelUsage{Model: m, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens, TotalTokens: u.TotalTokens})
	}
	return out
}

// MergeByModel sums several breakdowns (a pipeline's units), costs
// included where every part had one.
func MergeByModel(lists ...[]ModelUsage) []ModelUsage {
	var out []ModelUsage
	for _, l := range lists {
		for _, u := range l {
			out = add(out, u)
		}
	}
	return out
}

func add(out []ModelUsage, u ModelUsage) []ModelUsage {
	i, found := slices.BinarySearchFunc(out, u.Model, func(e ModelUsage, m string) int { return cmp.Compare(e.Model, m) })
	if !found {
		u.Cost = clone(u.Cost)
		return slices.Insert(out, i, u)
	}
	e := &out[i]
	e.PromptTokens += u.PromptTokens
	e.CompletionTokens += u.CompletionTokens
	e.CachedTokens += u.CachedTokens
	e.ReasoningTokens += u.ReasoningTokens
	e.TotalTokens += u.TotalTokens
	if e.Cost != nil && u.Cost != nil {
		*e.Cost = roundCost(*e.Cost + *u.Cost)
	} else {
		e.Cost = nil // a part without a price: the sum has none
	}
	return out
}

// CostPrecision is how many decimals a cost keeps: a millionth of the
// currency the operator priced in.
const CostPrecision = 6

// roundCost keeps CostPrecision decimals; the JSON encoder then writes
// the shortest decimal that reads back as it (0.1, not 0.1000000000000000055).
func roundCost(c float64) float64 {
	return math.Round(c*1e6) / 1e6
}

func clone(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

// Price is what a million tokens of one model cost, input and output.
type Price struct{ In, Out float64 }

// Priced sets each model's cost from prices and returns the total and the
// models used without a price (whose tokens the total does not count).
func Priced(us []ModelUsage, prices map[string]Price) (total *float64, unpriced []string) {
	if len(prices) == 0 {
		return nil, nil
	}
	var sum float64
	for i := range us {
		p, ok := prices[us[i].Model]
		if !ok {
			unpriced = append(unpriced, us[i].Model)
			continue
		}
		c := roundCost((float64(us[i].PromptTokens)*p.In + float64(us[i].CompletionTokens)*p.Out) / 1e6)
		us[i].Cost = &c
		sum = roundCost(sum + c)
	}
	return &sum, unpriced
}

// CostOf is the total of a breakdown's costs and the models that had none
// (nil total when no model had one).
func CostOf(us []ModelUsage) (total *float64, unpriced []string) {
	var sum float64
	priced := false
	for _, u := range us {
		if u.Cost == nil {
			unpriced = append(unpriced, u.Model)
			continue
		}
		sum, priced = roundCost(sum+*u.Cost), true
	}
	if !priced {
		return nil, nil
	}
	return &sum, unpriced
}
