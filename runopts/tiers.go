package runopts

import (
	"slices"
	"strconv"
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// TierMap reads --tier entries (TIER=MODEL) into a map; a tier named
// twice, an unknown tier or an empty model is a usage error.
func TierMap(entries []string) (map[string]string, error) {
	m := map[string]string{}
	for _, e := range entries {
		tier, model, ok := strings.Cut(e, "=")
		model = strings.TrimSpace(model)
		switch {
		case !ok || model == "":
			return nil, outcome.Usage("tier_invalid", "--tier %q: give TIER=MODEL, e.g. light=gpt-4.1-nano", e)
		case !slices.Contains(skills.Tiers, tier):
			return nil, outcome.Usage("tier_invalid", "--tier %q: %s is not a tier (use %s)", e, tier, strings.Join(skills.Tiers, ", "))
		case m[tier] != "":
			return nil, outcome.Usage("tier_invalid", "--tier %s is given twice (%s and %s): map each tier once", tier, m[tier], model)
		}
		m[tier] = model
	}
	return m, nil
}

// Price is what a million tokens cost a model, input and output, in the
// operator's currency.
type Price = record.Price

// PriceMap reads --price entries (MODEL=IN/OUT).
func PriceMap(entries []string) (map[string]Price, error) {
	m := map[string]Price{}
	for _, e := range entries {
		model, io, ok := strings.Cut(e, "=")
		in, out, ok2 := strings.Cut(io, "/")
		pin, err1 := strconv.ParseFloat(in, 64)
		pout, err2 := strconv.ParseFloat(out, 64)
		if !ok || !ok2 || model == "" || err1 != nil || err2 != nil || pin < 0 || pout < 0 {
			return nil, outcome.Usage("price_invalid", "--price %q: give MODEL=IN/OUT, the price of a million input and of a million output tokens, e.g. gpt-4.1-mini=0.4/1.6", e)
		}
		if _, dup := m[model]; dup {
			return nil, outcome.Usage("price_invalid", "--price %s is given twice: price each model once", model)
		}
		m[model] = Price{In: pin, Out: pout}
	}
	return m, nil
}

// TierModel is the model a tier runs on: the operator's mapping, else
// for standard the run's own model. mapped is false when the operator
// mapped nothing for it (the caller then falls back to the run's model,
// and says so, or refuses a vision tier).
func (o *Options) TierModel(tier string) (model string, mapped bool) {
	m, _ := TierMap(o.Tiers) // Check refused a bad map
	if model, ok := m[tier]; ok {
		return model, true
	}
	if tier == "standard" {
		return o.Model, true
	}
	return o.Model, false
}
