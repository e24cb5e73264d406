package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schema validates tool-call arguments against the tool's declared JSON
// schema, so a tool never sees arguments its schema rules out.
type schema struct{ s *jsonschema.Schema }

func compileSchema(name string, raw json.RawMessage) (*schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &schema{}, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	url := "harness:tool/" + name + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	return &schema{s: s}, nil
}

func (s *schema) validate(args json.RawMessage) error {
	if s.s == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return err
	}
	if err := s.s.Validate(v); err != nil {
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			return fmt.Errorf("%s", describe(ve))
		}
		return err
	}
	return nil
}

// describe turns a validation error tree into one line per leaf, each
// naming the argument it is about.
func describe(ve *jsonschema.ValidationError) string {
	p := message.NewPrinter(language.English)
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
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
