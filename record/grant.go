package record

// Grant is what one execution of a skill's code (a script, an MCP server,
// a draft's test) was given, and what enforced each part. It is part of
// every execution record.
type Grant struct {
	// Declared says the skill has a permission manifest; without one the
	// execution sees the whole workspace read-write (read-only paths
	// aside) and may execute anything its sandbox shows.
	Declared bool `json:"declared"`
	// Read and Write are the workspace paths visible read-only and
	// read-write ("." is all of it); absent parts do not exist for it.
	Read  []string `json:"read"`
	Write []string `json:"write"`
	// ReadOnly are the protected paths kept read-only inside what it may
	// write (git's directory, skill roots, --protect).
	ReadOnly []string `json:"readOnly"`
	// Env are the variables passed (declared and passed by the operator
	// with --pass-env, and set); Withheld those declared and not passed.
	Env      []string `json:"env"`
	Withheld []string `json:"withheldEnv,omitempty"`
	// ExecLimited says only the runtime and Exec may be executed.
	ExecLimited bool     `json:"execLimited"`
	Exec        []string `json:"exec"`
	// ExecResolved is what Exec came to on this machine: absolute host
	// files (each program and what the kernel loads to start it) and
	// directories (ending in "/": every file beneath may run); ExecTemp
	// says the call's private temporary directory may run too;
	// ExecMissing are entries that named nothing here (they run nothing).
	ExecResolved []string `json:"execResolved,omitempty"`
	ExecTemp     bool     `json:"execTemp,omitempty"`
	ExecMissing  []string `json:"execMissing,omitempty"`
	// EnforcedBy names, per part (filesystem, env, exec, network), the
	// mechanism that enforced it.
	EnforcedBy map[string]string `json:"enforcedBy"`
}
