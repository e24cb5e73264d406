// Package approval journals the calls of a run that wait for a person and
// the decisions made about them: approval.requested for each call the gate
// left waiting (and for each call waiting in a delegate_task child, named
// CHILD_ID/CALL_ID), and, on resume, a person's --approve and --deny,
// every one checked against the calls the stopped run left waiting, the
// skill versions and arguments they were requested for, before any is
// journaled. Which calls wait is gate.Approvals; the runner hands a
// child's decisions down when it resumes the child.
package approval
