// Package archtest holds the test that keeps docs/architecture.md's import
// rules true: each package imports only the harness packages its row of
// the package table names.
package archtest
