package loop

import (
	"context"
	"errors"
)

// Fallback is Primary until it fails with an outage after its retries;
// from then on every request goes to the model named Model on the same
// endpoint (the failed request again at once, then the rest of the run).
// Switched is told once, with the error that made it switch.
type Fallback struct {
	Primary  Model
	Model    string
	Switched func(error)
	using    bool
}

func (f *Fallback) Complete(ctx context.Context, req Request) (Response, error) {
	if !f.using {
		resp, err := f.Primary.Complete(ctx, req)
		var pe *ProviderError
		if err == nil || !errors.As(err, &pe) || !pe.Retryable {
			return resp, err
		}
		f.using = true
		f.Switched(err)
	}
	req.Model = f.Model
	resp, err := f.Primary.Complete(ctx, req)
	resp.Usage.Model = f.Model
	return resp, err
}

// Embed lets find_skills use the wrapped model's embeddings endpoint.
func (f *Fallback) Embed(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	e, ok := f.Primary.(Embedder)
	if !ok {
		return nil, errors.New("embeddings: the model cannot embed")
	}
	return e.Embed(ctx, model, inputs)
}
