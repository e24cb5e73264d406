// Package report reads run directories and renders them for people: the
// list of past runs and one run's summary. It reads the artifacts only
// (the record types), so it shows any directory harness wrote, and it
// never changes one.
package report
