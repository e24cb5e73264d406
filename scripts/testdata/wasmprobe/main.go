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
	case "put":
		// Replaces a file with the given text.
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		fmt.Println("put", args[0])
	case "append":
		f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(args[1])
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		fmt.Println("appended", args[0])
	case "mkdir":
		if err := os.Mkdir(args[0], 0o755); err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		fmt.Println("made", args[0])
	case "remove":
		fmt.Printf("remove: %v\n", os.Remove(args[0]))
		fmt.Printf("rename: %v\n", os.Rename(args[0], args[0]+".moved"))
	case "write-unclosed":
		// Writes and exits without closing: a process's file keeps it.
		f, err := os.Create(args[0])
		if err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		f.WriteString("left open")
		os.Exit(0)
	case "write-spin":
		// Writes, then never ends: killed, its file must not land.
		f, err := os.Create(args[0])
		if err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		f.WriteString("half")
		for n := 0; ; n++ {
			if n < 0 {
				fmt.Println(n)
			}
		}
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
