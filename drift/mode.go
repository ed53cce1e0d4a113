package drift

import "fmt"

// Mode is what the daemon does about drift: the value of gpuctl-reconciler --drift, stored in
// every report and in the daemon's status.
type Mode string

// The drift modes.
const (
	// ModeReport records drift and leaves it: a sync of an unchanged revision does not apply
	// again; a new revision or a sync request applies everything.
	ModeReport Mode = "report"
	// ModeCorrect repairs drift as it happens: every sync applies, the detector re-applies
	// owned fields, recreates deleted objects and re-labels nodes.
	ModeCorrect Mode = "correct"
)

// Modes lists every drift mode, the default first.
var Modes = []Mode{ModeReport, ModeCorrect}

// ParseMode returns the mode spelled s, or an error naming s and the valid modes.
func ParseMode(s string) (Mode, error) {
	m := Mode(s)
	switch m {
	case ModeReport, ModeCorrect:
		return m, nil
	}
	return "", fmt.Errorf("unknown drift mode %q (want %s or %s)", s, ModeReport, ModeCorrect)
}

// String returns the mode's spelling.
func (m Mode) String() string { return string(m) }

// Set parses s into m; with String and Type, Mode is a pflag.Value, so a flag holds it directly.
func (m *Mode) Set(s string) error {
	v, err := ParseMode(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Type names the flag's value type in --help.
func (m *Mode) Type() string { return "string" }
