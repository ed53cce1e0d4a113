package yamlerr

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one error of go-yaml: its line (0 when it names none) and its message.
type Problem struct {
	Line    int
	Message string
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Problems splits err, from a yaml.v3 Decode, into its problems. types maps go-yaml's Go type
// names ("review.Policy") to words for the reader ("the policy"): "type review.Policy" in a
// message becomes "the policy".
func Problems(err error, types map[string]string) []Problem {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	ps := make([]Problem, 0, len(msgs))
	for _, m := range msgs {
		p := Problem{Message: m}
		if g := yamlLine.FindStringSubmatch(m); g != nil {
			p.Line, _ = strconv.Atoi(g[1])
			p.Message = g[2]
		}
		for t, words := range types {
			p.Message = strings.Replace(p.Message, "type "+t, words, 1)
		}
		ps = append(ps, p)
	}
	return ps
}

// Error is a problem in a file that a strict parser read, with its position: what review's
// gpuctl-policy.yaml (review.PolicyError) and notify's gpuctl-alerts.yaml (notify.ConfigError)
// return, joined.
type Error struct {
	File    string
	Line    int // 0 when it names no line
	Message string
}

// Error formats the error as file:line: message (file: message without a line).
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return e.File + ": " + e.Message
}

// Errors turns err, from a yaml.v3 Decode of file, into *Errors (Problems, with types), joined.
func Errors(file string, err error, types map[string]string) error {
	var errs []error
	for _, p := range Problems(err, types) {
		errs = append(errs, &Error{File: file, Line: p.Line, Message: p.Message})
	}
	return errors.Join(errs...)
}
