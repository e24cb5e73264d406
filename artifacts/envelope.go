package artifacts

// Envelope is embedded first in every JSON artifact so that a reader can
// tell what a file is and which schema version wrote it before decoding the
// rest. Types are "harness.<name>"; the version rises on any incompatible
// change to the record's shape.
type Envelope struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
}

// NewEnvelope returns the header for an artifact of the given type and version.
func NewEnvelope(typ string, version int) Envelope {
	return Envelope{Type: typ, Version: version}
}
