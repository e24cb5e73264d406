// Command firstrequest measures how long `harness run` takes from process
// start to its first model request: it serves chat completions on
// loopback, notes when each request arrives, starts the given harness
// command N times in a row (adding --base-url), and prints the minimum
// and median start-to-request times and the median whole-run time.
//
//	go run ./testdata/bench/firstrequest -n 20 -- ./harness run --workspace ws ...
package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"time"
)

const answer = `{"id":"b","object":"chat.completion","created":0,"model":"bench",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func main() {
	n := flag.Int("n", 20, "runs")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: firstrequest [-n N] -- harness run ...")
		os.Exit(2)
	}
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- time.Now():
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	var first, whole []time.Duration
	for range *n {
		cmd := exec.Command(args[0], append(args[1:], "--base-url", srv.URL+"/v1")...)
		cmd.Env = append(os.Environ(), "HARNESS_API_KEY=bench")
		cmd.Stderr = os.Stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "firstrequest:", err)
			os.Exit(1)
		}
		err := cmd.Wait()
		end := time.Now()
		if err != nil {
			fmt.Fprintln(os.Stderr, "firstrequest: run failed:", err)
			os.Exit(1)
		}
		select {
		case t := <-arrived:
			first = append(first, t.Sub(start))
		default:
			fmt.Fprintln(os.Stderr, "firstrequest: the run made no model request")
			os.Exit(1)
		}
		whole = append(whole, end.Sub(start))
	}
	slices.Sort(first)
	slices.Sort(whole)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("first request: min %.1f ms, median %.1f ms; whole run: median %.1f ms (%d runs)\n",
		ms(first[0]), ms(first[len(first)/2]), ms(whole[len(whole)/2]), len(first))
}
