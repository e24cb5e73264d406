// Command wasmprobe is a WASI module for harness's tests: each mode does
// one thing a skill's module might, fair or hostile.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmprobe MODE [ARGS]")
		os.Exit(2)
	}
	switch mode, args := os.Args[1], os.Args[2:]; mode {
	case "echo":
		in, _ := io.ReadAll(os.Stdin)
		wd, _ := os.Getwd()
		fmt.Printf("args=%s stdin=%s skill=%s home=%q secret=%q wd=%s\n", strings.Join(args, ","), in, os.Getenv("SKILL_NAME"), os.Getenv("HOME"), os.Getenv("HARNESS_TEST_SECRET"), wd)
	case "cat":
		for _, p := range args {
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Printf("%s: error: %v\n", p, err)
				continue
			}
			fmt.Printf("%s: %s\n", p, b)
		}
	case "ls":
		des, err := os.ReadDir(args[0])
		if err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		for _, de := range des {
			fmt.Println(de.Name())
		}
	case "write":
		if err := os.WriteFile(args[0], []byte("written by a module"), 0o644); err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		fmt.Println("wrote", args[0])
	case "symlink":
		if err := os.Symlink(args[0], args[1]); err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		fmt.Println("linked")
	case "dial":
		c, err := net.Dial("tcp", args[0])
		if err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected")
	case "spin":
		for n := 0; ; n++ {
			if n < 0 {
				fmt.Println(n)
			}
		}
	case "hog":
		var keep [][]byte
		for i := 0; ; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(i + j)
			}
			keep = append(keep, b)
			if i%16 == 0 {
				fmt.Fprintf(os.Stderr, "%d MiB\n", i)
			}
		}
	case "exit":
		os.Exit(7)
	case "exit0":
	case "flood":
		line := strings.Repeat("x", 1023) + "\n"
		for i := 0; i < 4096; i++ {
			os.Stdout.WriteString(line)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
}
