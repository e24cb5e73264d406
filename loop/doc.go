// Package loop is the model-agnostic prompt loop: it sends the conversation
// to a Model, runs the tools the model asks for in the order given, enforces
// the run's limits and journals every step. It knows nothing of skills,
// policy rules or the CLI; tools and models are supplied by the caller.
package loop
