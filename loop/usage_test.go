package loop

import "testing"

// A provider's counts are input: whatever it reports, a response counts
// as spending no less than nothing and no more than maxUsageCount per
// count, and a total never below its parts.
func TestCheckUsage(t *testing.T) {
	req := Request{Messages: []Message{{Role: RoleUser, Content: "0123456789abcdef"}}}
	msg := Message{Role: RoleAssistant, Content: "01234567"}
	for _, tc := range []struct {
		name      string
		in, want  Usage
		corrected bool
	}{
		{"as reported", Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}, Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}, false},
		{"negative prompt is estimated", Usage{PromptTokens: -1000000, CompletionTokens: 5, TotalTokens: -999995},
			Usage{PromptTokens: 4, CompletionTokens: 5, TotalTokens: 9, Estimated: true, Corrected: true}, true},
		{"negative completion is estimated", Usage{PromptTokens: 10, CompletionTokens: -1, TotalTokens: 9},
			Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, Estimated: true, Corrected: true}, true},
		{"negative details are zero", Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: -3, ReasoningTokens: -4, TotalTokens: 15},
			Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Corrected: true}, true},
		{"an overflowed total is the sum of capped parts", Usage{PromptTokens: 9e18, CompletionTokens: 9e18, TotalTokens: -446744073709551616},
			Usage{PromptTokens: maxUsageCount, CompletionTokens: maxUsageCount, TotalTokens: 2 * maxUsageCount, Corrected: true}, true},
		{"cached beyond the prompt is the prompt", Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 5000, TotalTokens: 15},
			Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 10, TotalTokens: 15, Corrected: true}, true},
		{"cached beyond an estimated prompt", Usage{PromptTokens: -1, CompletionTokens: 5, CachedTokens: 7, TotalTokens: 15},
			Usage{PromptTokens: 4, CompletionTokens: 5, CachedTokens: 4, TotalTokens: 15, Estimated: true, Corrected: true}, true},
		{"cached equal to the prompt", Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 10, TotalTokens: 15},
			Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 10, TotalTokens: 15}, false},
		{"a total below its parts", Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 0},
			Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Corrected: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, corrected := checkUsage(tc.in, req, msg)
			if got != tc.want || corrected != tc.corrected {
				t.Fatalf("checkUsage(%+v) = %+v, %v; want %+v, %v", tc.in, got, corrected, tc.want, tc.corrected)
			}
		})
	}
}
