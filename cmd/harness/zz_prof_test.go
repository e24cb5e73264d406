package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestZZProf(t *testing.T) {
	os.RemoveAll("/tmp/harness-bench-batch.ah5F4m/runsprof")
	var o, e bytes.Buffer
	c, _ := os.ReadDir("/tmp/harness-bench-batch.ah5F4m/cassettes")
	code := Main([]string{"harness", "batch", "run", "/tmp/harness-bench-batch.ah5F4m/two-hundred.yaml", "--quiet", "--jobs", "1", "--replay", "/tmp/harness-bench-batch.ah5F4m/cassettes/" + c[0].Name(), "--artifacts-dir", "/tmp/harness-bench-batch.ah5F4m/runsprof"}, strings.NewReader(""), &o, &e)
	if code != 0 {
		t.Fatal(e.String())
	}
}
