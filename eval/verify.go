package eval

import (
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// ReadResult reads an earlier eval's result, for --no-regression-from:
// an eval directory (verified first) or an eval-result.json.
func ReadResult(path string, key []byte) (*record.EvalResult, error) {
	var r record.EvalResult
	if err := artifacts.ReadJSON(path, record.TypeEvalResult, record.EvalVersion, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
