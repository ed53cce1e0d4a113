package object

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// None is how a missing value (a field that is not set, or is gone) prints for people:
// kubectl's spelling.
const None = "<none>"

// Display formats a field value for people, the same in the CLI, the reports and the web page:
// a missing value (nil) as None, a string as it is, anything else — numbers, booleans, maps and
// lists — as compact JSON with sorted keys (never Go's map[…] form). Machine-readable outputs
// (JSON, YAML) keep raw values instead. Each medium escapes and shortens the result as it needs.
func Display(v any) string {
	switch x := v.(type) {
	case nil:
		return None
	case string:
		return x
	case fmt.Stringer:
		return x.String()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // each medium escapes for itself: JSON's \u003c would show
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v) // not JSON data (never from a Kubernetes object)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
