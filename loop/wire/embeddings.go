package wire

// EmbeddingsPath is where embeddings are asked for.
const EmbeddingsPath = "embeddings"

// EmbeddingsRequest is the body of POST /embeddings.
type EmbeddingsRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

// Embeddings is its answer: one vector per input, each with the index of
// its input.
type Embeddings struct {
	Data []struct {
		Index     int64     `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}
