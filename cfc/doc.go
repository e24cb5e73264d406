// Package cfc is contextual flow control: it labels what is in a model's
// context (role, integrity, confidentiality), decides every tool call
// against the operator's policy with reason codes, and scans content for
// injection-like patterns. Skill text and observations are context, never
// authority. It knows nothing of HTTP, models or skills on disk.
package cfc
