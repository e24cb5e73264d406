// Package runresult says how a run ended: the error and exit code for the
// way its loop stopped (a limit, a denial, an incomplete or refused
// answer, a provider's failure told apart as a configuration mistake, a
// rejected request or an outage), the message that tells a person what to
// do next, and result.json, the same in the terms a CI job acts on, with
// the command that continues a resumable run. It decides nothing about
// the run: the runner hands it what happened and writes what it returns.
package runresult
