package looptest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// response is the Responses API object for reply n: a reasoning item (when
// the reply has reasoning), then the message or the function calls, with
// the status and incomplete_details the Chat finish reason stands for.
func (s *Server) response(n int, rep *Reply) map[string]any {
	var output []any
	if rep.Reasoning != "" {
		id := fmt.Sprintf("rs_%d", n)
		// Opaque to the client, as the provider's encrypted reasoning is;
		// derived from the reply so that recordings are reproducible.
		enc := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("sealed:%d:%s", n, rep.Reasoning)))
		item := map[string]any{"id": id, "type": "reasoning",
			"summary": []any{map[string]any{"type": "summary_text", "text": rep.Reasoning}}, "encrypted_content": enc}
		raw, _ := json.Marshal(item)
		s.mu.Lock()
		if s.issued == nil {
			s.issued = map[string]string{}
		}
		s.issued[id] = string(raw)
		s.mu.Unlock()
		output = append(output, json.RawMessage(raw))
	}
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i+1)
		}
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_%d_%d", n, i+1), "type": "function_call", "status": "completed",
			"call_id": id, "name": c.Name, "arguments": c.Arguments})
	}
	if len(rep.ToolCalls) == 0 {
		part := map[string]any{"type": "output_text", "text": rep.Content, "annotations": []any{}}
		if rep.Refusal != "" {
			part = map[string]any{"type": "refusal", "refusal": rep.Refusal}
		}
		output = append(output, map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
			"status": "completed", "content": []any{part}})
	}
	status, incomplete := "completed", any(nil)
	switch rep.FinishReason {
	case "length":
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	case "content_filter":
		status, incomplete = "incomplete", map[string]any{"reason": "content_filter"}
	}
	u := Usage{Prompt: 10, Completion: 5}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	out := map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 0, "model": "fake",
		"status": status, "incomplete_details": incomplete, "error": nil, "output": output,
		"usage": map[string]any{
			"input_tokens": u.Prompt, "input_tokens_details": map[string]any{"cached_tokens": u.Cached},
			"output_tokens": u.Completion, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			"total_tokens": u.Prompt + u.Completion,
		},
	}
	if rep.NoUsage {
		delete(out, "usage")
	}
	return out
}

// altered names a reasoning item the request sends back that is not
// byte for byte the one the server issued ("" when there is none): the
// provider could not read it.
func (s *Server) altered(body []byte) string {
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	json.Unmarshal(body, &req)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, raw := range req.Input {
		var it struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Type != "reasoning" {
			continue
		}
		if want, ok := s.issued[it.ID]; !ok || want != string(raw) {
			return fmt.Sprintf("fake server: reasoning item %s is not the one issued: %s", it.ID, raw)
		}
	}
	return ""
}

// writeEvents sends a response as the Responses event stream, in the
// documented order: response.created, then per output item
// output_item.added, its text as output_text.delta events, and
// output_item.done, then response.completed (or response.incomplete).
func writeEvents(w http.ResponseWriter, resp map[string]any, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	created := map[string]any{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"], created["output"], created["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": created})
	for i, item := range resp["output"].([]any) {
		var m map[string]any
		switch it := item.(type) {
		case json.RawMessage:
			json.Unmarshal(it, &m)
		case map[string]any:
			m = it
		}
		if m["type"] == "message" {
			added := map[string]any{"id": m["id"], "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, part := range m["content"].([]any) {
				p := part.(map[string]any)
				if p["type"] == "output_text" {
					text := []rune(p["text"].(string))
					// Two deltas, as a stream cuts text where it likes.
					half := len(text) / 2
					for _, d := range []string{string(text[:half]), string(text[half:])} {
						event("response.output_text.delta", map[string]any{"output_index": i, "item_id": m["id"], "content_index": 0, "delta": d})
					}
				}
			}
		} else {
			event("response.output_item.added", map[string]any{"output_index": i, "item": item})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	if cut {
		return
	}
	final := "response.completed"
	if resp["status"] == "incomplete" {
		final = "response.incomplete"
	}
	event(final, map[string]any{"response": resp})
}
