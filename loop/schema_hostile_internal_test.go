package loop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// A tool's schema is written by whoever wrote the tool: a skill's author
// (the tools a destructive skill declares) or the MCP server it starts.
// Compiling it must not make harness, on the host, open a file the
// operator never named, whatever keyword names it.
func TestToolSchemaOpensNoHostFileWhateverKeywordNamesIt(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string","const":"TOPSECRET-7f3a"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, schema string }{
		// $schema is loaded as the metaschema through the same loader.
		{"$schema", `{"$schema":"file://` + secret + `","type":"object"}`},
		// A relative $ref against a file: $id: no "file:" in any $ref.
		{"$id base", `{"$id":"file://` + dir + `/x.json","properties":{"a":{"$ref":"secret.json"}}}`},
		{"$dynamicRef", `{"$dynamicRef":"file://` + secret + `"}`},
		// A FIFO: the compile must not wait on it.
		{"$schema fifo", `{"$schema":"file://` + fifo + `"}`},
		{"$id base fifo", `{"$id":"file://` + dir + `/x.json","properties":{"a":{"$ref":"fifo.json"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				s, err := compileSchema("t", json.RawMessage(tc.schema))
				if err == nil {
					err = s.validate(json.RawMessage(`{"a":"x"}`))
					if err != nil && strings.Contains(err.Error(), "TOPSECRET") {
						t.Errorf("the file's content reached the model: %v", err)
					}
					err = nil
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("schema %s compiled: a file:// reference must be refused", tc.schema)
				}
			case <-time.After(3 * time.Second):
				// Let the blocked open go before the test ends.
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatalf("compiling %s blocked on a FIFO for 3 s", tc.schema)
			}
		})
	}
}

// Validation against a schema whose references fan out ($defs each
// referring twice to the one before) costs 2^n while the schema grows
// with n: a few hundred bytes of a server's tools/list hold every
// argument check of the run (and with it --timeout and an interrupt,
// since the check runs on the loop's goroutine) for longer than the
// universe has. Such a schema must be refused, or its check bounded.
func TestToolSchemaValidationIsBoundedUnderRefFanOut(t *testing.T) {
	defs := `"d0":{"type":"object"}`
	for i := 1; i <= 60; i++ {
		defs += fmt.Sprintf(`,"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	raw := `{"$defs":{` + defs + `},"$ref":"#/$defs/d60"}`
	if !testenv.InBoundedChild(t, 3*time.Second, "checking {} against a 4 KB schema") {
		return
	}
	s, err := compileSchema("t", json.RawMessage(raw))
	if err == nil {
		s.validate(json.RawMessage(`{}`))
	}
}

// A number is one token to the JSON decoder but costs what its exponent
// says once the schema library turns it into a big.Rat, which it does for
// "type": "integer", minimum and maximum, multipleOf, enum and const, and
// uniqueItems: 1e999999 takes tens of milliseconds and 400 KB of digits
// each. A model's 30 KB answer (or tool-call arguments) of such numbers
// against the operator's own --output-schema holds the answer check, on
// the loop's goroutine, for minutes. A number's size must be bounded
// before the library sees it (or the check bounded as a whole).
func TestAnswerCheckIsBoundedUnderHugeExponents(t *testing.T) {
	check, err := NewSchemaCheck(json.RawMessage(`{"type":"array","items":{"type":"integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	answer := "[" + strings.TrimSuffix(strings.Repeat("1e999999,", 3000), ",") + "]"
	if !testenv.InBoundedChild(t, 3*time.Second, fmt.Sprintf("checking a %d-byte answer", len(answer))) {
		return
	}
	check.Check(answer)
}

// The same numbers in a tool's schema cost at compile time: each of
// minimum, maximum, multipleOf, enum and const is turned into a big.Rat
// when the schema is compiled, so a server's tools/list (or a skill's
// declared tools) of a few kilobytes holds the loop before the model has
// been asked anything.
func TestToolSchemaCompileIsBoundedUnderHugeExponents(t *testing.T) {
	var props []string
	for i := 0; i < 400; i++ {
		props = append(props, fmt.Sprintf(`"p%d":{"maximum":1e999999}`, i))
	}
	raw := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
	if !testenv.InBoundedChild(t, 3*time.Second, fmt.Sprintf("compiling a %d-byte tool schema", len(raw))) {
		return
	}
	compileSchema("t", json.RawMessage(raw))
}

// Nesting costs more than its size: compiling a schema of n nested
// "items" takes time that grows faster than n squared (depth 1,000, 10 KB:
// 2.6 s; depth 2,000, 20 KB: 14 s; JSON allows 10,000 levels, and a
// tools/list frame 16 MiB). A server's tools/list, a skill's declared
// tools or an eval's check schema of that shape holds harness for many
// minutes. Such a schema must be refused by its depth, or compiled in time
// that grows with its size.
func TestToolSchemaCompileIsBoundedUnderDeepNesting(t *testing.T) {
	const depth = 2000
	raw := strings.Repeat(`{"items":`, depth) + `{"type":"string"}` + strings.Repeat(`}`, depth)
	if !testenv.InBoundedChild(t, 3*time.Second, fmt.Sprintf("compiling a %d-byte tool schema nested %d deep", len(raw), depth)) {
		return
	}
	compileSchema("t", json.RawMessage(raw))
}

// A model's tool-call arguments are bounded only by the response body
// (256 MiB). The schema library collects every failure, and describe
// joins them all, each enum failure with every allowed value: 400 KB of
// arguments, 200,000 numbers where the schema wants strings (run_command's
// argv), become an 8 MB message and over 200 MiB allocated; 4 KB of
// arguments, 1,000 words none of which is among an enum's 1,000 values,
// a 14 MB message. The message goes back to the model as the tool's
// result and into the run directory; a few megabytes of arguments exhaust
// the host's memory. The check must stop early and its message stay
// small, whatever the arguments.
func TestArgumentErrorStaysSmallWhateverTheArguments(t *testing.T) {
	var values []string
	for i := 0; i < 1000; i++ {
		values = append(values, fmt.Sprintf(`"value-%04d"`, i))
	}
	for _, tc := range []struct{ name, schema, args string }{
		{"numbers for strings", `{"type":"object","properties":{"argv":{"type":"array","items":{"type":"string"}}}}`,
			`{"argv":[` + strings.TrimSuffix(strings.Repeat("0,", 200000), ",") + "]}"},
		{"words outside an enum", `{"type":"object","properties":{"tags":{"type":"array","items":{"enum":[` + strings.Join(values, ",") + `]}}}}`,
			`{"tags":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 1000), ",") + "]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compileSchema("t", json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			verr := s.validate(json.RawMessage(tc.args))
			runtime.ReadMemStats(&after)
			if verr == nil {
				t.Fatal("the arguments passed")
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes of arguments: a %d-byte error, %d MiB allocated", len(tc.args), len(verr.Error()), alloc>>20)
			if len(verr.Error()) > 64<<10 {
				t.Errorf("the error for %d bytes of arguments is %d bytes: it goes to the model and the run directory whole", len(tc.args), len(verr.Error()))
			}
			if alloc > 128<<20 {
				t.Errorf("checking %d bytes of arguments allocated %d MiB", len(tc.args), alloc>>20)
			}
		})
	}
}
