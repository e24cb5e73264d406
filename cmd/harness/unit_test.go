package main

import (
	"slices"
	"testing"

	"github.com/harness-dev/harness/record"
)

// Every unit setting is a flag of harness run, and with the workspace and
// the endpoint (flags of their own) they are exactly the keys a file's
// defaults hold.
func TestUnitSettingsAreTheFileSettings(t *testing.T) {
	for _, n := range unitSettings {
		if !slices.ContainsFunc(runOptions, func(o option) bool { return o.name == n }) {
			t.Errorf("unit setting %q is not a flag of harness run", n)
		}
	}
	for _, n := range resumeSettings {
		if !slices.Contains(unitSettings, n) {
			t.Errorf("resume setting %q is not a unit setting", n)
		}
	}
	keys := record.SettingKeys()
	want := append(slices.Clone(unitSettings), "workspace", "base-url")
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("record.Settings keys %v,\nunit flags + workspace + base-url %v", keys, want)
	}
}
