// Command fakeprovider serves scripted chat completions on loopback so the
// demo cassette can be re-recorded without a model account. It prints the
// base URL on its first line of stdout and serves until stdin closes.
//
//	go run ./examples/demo/fakeprovider examples/demo/replies.json
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/harness-dev/harness/loop/looptest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeprovider replies.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeprovider:", err)
		os.Exit(1)
	}
	var replies []looptest.Reply
	if err := json.Unmarshal(data, &replies); err != nil {
		fmt.Fprintf(os.Stderr, "fakeprovider: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	srv := looptest.New(replies)
	defer srv.Close()
	fmt.Println(srv.URL)
	// The caller ends the server by closing our stdin, which also happens
	// when the caller dies: no stray listener outlives a recording.
	io.Copy(io.Discard, os.Stdin)
}
