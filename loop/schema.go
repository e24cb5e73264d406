package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harness-dev/harness/internal/docschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schema validates tool-call arguments against the tool's declared JSON
// schema, so a tool never sees arguments its schema rules out.
type schema struct{ s *docschema.Schema }

func compileSchema(name string, raw json.RawMessage) (*schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &schema{}, nil
	}
	// Self-contained: a tool's schema is often an MCP server's or a
	// skill's words, which must not make harness open a file of the host.
	s, err := docschema.Compile("tool/"+name+".json", raw)
	if err != nil {
		return nil, err
	}
	return &schema{s: s}, nil
}

// SchemaError is a tool whose parameter schema harness cannot use: the
// run fails before the model is asked (runresult gives it its code).
type SchemaError struct {
	Tool string
	Err  error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("tool %s: its parameter schema cannot be used: %v", e.Tool, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

func (s *schema) validate(args json.RawMessage) error {
	if s.s == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return err
	}
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s", describe(ve))
		}
		return err
	}
	return nil
}

// describe turns a validation error tree into one line per leaf (at most
// docschema.MaxProblems of them), each naming the argument it is about.
func describe(ve *jsonschema.ValidationError) string {
	var parts []string
	for _, p := range docschema.Problems(ve) {
		if strings.HasPrefix(p, "/") {
			p = "at " + p
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// SchemaCheck is an AnswerCheck: the final answer must be one JSON value
// that matches a JSON Schema (--output-schema).
type SchemaCheck struct{ s *schema }

// NewSchemaCheck compiles a JSON Schema for answers.
func NewSchemaCheck(raw json.RawMessage) (*SchemaCheck, error) {
	s, err := compileSchema("output", raw)
	if err != nil {
		return nil, err
	}
	return &SchemaCheck{s: s}, nil
}

// Check implements AnswerCheck.
func (c *SchemaCheck) Check(answer string) error {
	_, err := c.Parse(answer)
	return err
}

// Parse returns the answer as compact JSON when it matches the schema. A
// Markdown code fence around the JSON, which models often add, is
// ignored.
func (c *SchemaCheck) Parse(answer string) (json.RawMessage, error) {
	text := strings.TrimSpace(answer)
	if strings.HasPrefix(text, "```") && strings.HasSuffix(text, "```") && len(text) >= 6 {
		text = strings.TrimSpace(strings.TrimSuffix(text[3:], "```"))
		if nl := strings.IndexByte(text, '\n'); nl >= 0 && !strings.ContainsAny(text[:nl], "{[\"") {
			text = text[nl+1:] // the fence's language tag
		}
	}
	if !json.Valid([]byte(text)) {
		return nil, fmt.Errorf("the answer is not one JSON value")
	}
	if err := c.s.validate(json.RawMessage(text)); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
