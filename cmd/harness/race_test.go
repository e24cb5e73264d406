//go:build race

package main

// raceBuild is true when this test binary has the race detector in it.
const raceBuild = true
