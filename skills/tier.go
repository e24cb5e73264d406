package skills

import (
	"fmt"
	"slices"
	"strings"
)

// Tiers are the model tiers a skill may ask for
// (metadata.harness.tier): the operator maps each to a model (--tier
// light=MODEL), so that routine work runs on cheap models. vision asks for
// a model the operator marked as able to see.
var Tiers = []string{"light", "standard", "heavy", "vision"}

// TierOf reads metadata.harness.tier: "" when there is none; an error for
// a value that is not a tier.
func TierOf(fm map[string]any) (string, error) {
	meta, _ := fm["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	raw, present := h["tier"]
	if !present {
		return "", nil
	}
	t, ok := raw.(string)
	if !ok || !slices.Contains(Tiers, t) {
		return "", fmt.Errorf("metadata.harness.tier %v: give one of %s", raw, strings.Join(Tiers, ", "))
	}
	return t, nil
}
