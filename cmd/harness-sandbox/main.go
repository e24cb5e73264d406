// Command harness-sandbox is harness's sandbox helper as a program of its
// own: the Landlock helper that confines itself and runs a script, the
// execute limit inside bwrap, and the network forwarder. harness itself
// can play every one of these parts; this program exists because it
// starts in a fraction of the time (it links none of harness's model,
// schema or report code), and a script call may start it once or twice.
// harness uses it when it lies beside the harness binary.
package main

import (
	"fmt"
	"os"

	"github.com/harness-dev/harness/scripts"
)

func main() {
	if code, ok := scripts.HelperDispatch(os.Args); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "harness-sandbox: this is harness's sandbox helper; harness starts it, people run harness")
	os.Exit(2)
}
