// Package discovery finds skills beyond a run's own roots: indexes teams
// publish (JSON, fetched with a timeout, cached by URL with its ETag,
// read as data and nothing else), ranked together with the skills at
// hand by the project's BM25, and servers in an MCP registry.
package discovery

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/skills"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is the JSON Schema of an index (index.schema.json).
//
//go:embed index.schema.json
var Schema []byte

// TypeIndex names an index harness writes.
const TypeIndex = "harness.skill-index"

// MaxIndexBytes bounds an index read from anywhere.
const MaxIndexBytes = 8 << 20

// Entry is one skill an index offers.
type Entry struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Source      string           `json:"source"`
	Ref         string           `json:"ref,omitempty"`
	Digest      artifacts.Digest `json:"digest,omitempty"`
}

// Index is a skill index: the schema's type.
type Index struct {
	Type    string  `json:"type,omitempty"`
	Version int     `json:"version,omitempty"`
	Skills  []Entry `json:"skills"`
}

func schema() *jsonschema.Schema { return docschema.Embedded("index.schema.json", Schema, "") }

// Parse reads an index, refusing one that is too large or does not match
// the schema.
func Parse(data []byte) (*Index, error) {
	if len(data) > MaxIndexBytes {
		return nil, fmt.Errorf("the index is %d bytes, more than %d", len(data), MaxIndexBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("the index is not JSON: %v", err)
	}
	// Its numbers are the server's: bounded before the validator
	// compares them as exact fractions. Its size is bounded already.
	if err := docschema.CheckDocument(doc, math.MaxInt); err != nil {
		return nil, fmt.Errorf("the index is %v", err)
	}
	if err := schema().Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the index does not match its schema: %s", oneLine(ve))
		}
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, err
	}
	return &ix, nil
}

// oneLine is the first of the index's problems.
func oneLine(ve *jsonschema.ValidationError) string {
	return docschema.Problems(ve)[0]
}

// Of is the index of a registry's skills, each added from source (a git
// repository URL; "" for the skill's own directory) at dir (the root's
// path inside the repository) and ref.
func Of(reg *skills.Registry, source, dir, ref string) *Index {
	ix := &Index{Type: TypeIndex, Version: 1, Skills: []Entry{}}
	for i := range reg.Skills {
		s := &reg.Skills[i]
		if s.ShadowedBy != "" {
			continue
		}
		e := Entry{Name: s.Name, Description: s.Description, Ref: ref, Digest: s.Version()}
		if source == "" {
			e.Source = s.SkillDir
		} else {
			e.Source = source + "#" + path.Join(dir, path.Base(s.SkillDir))
		}
		ix.Skills = append(ix.Skills, e)
	}
	return ix
}
