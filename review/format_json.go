package review

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as indented JSON: the same data as the other formats, for
// tools (a bot that posts its own comment, a dashboard).
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
