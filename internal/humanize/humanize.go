package humanize

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Plural is n followed by noun, in the plural unless n is 1: the plural adds "s", or is the
// one given after the noun for an irregular one (Plural(2, "item is", "items are")).
func Plural[N ~int | ~int32 | ~int64](n N, noun string, plural ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(plural) > 0 {
		return fmt.Sprintf("%d %s", n, plural[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Duration is how long something took, rounded to what a person reads: milliseconds under
// a second (312ms), tenths of a second under a minute (2.3s), seconds above (1m5s).
func Duration(d time.Duration) string {
	switch a := d.Abs(); {
	case a < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case a < time.Second:
		return d.Round(time.Millisecond).String()
	case a < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Age is how long ago something happened, as kubectl prints an AGE: 37s, 5m, 3h, 2d, 1y. A
// time in the future (a clock ahead of this one) is 0s.
func Age(d time.Duration) string {
	return duration.ShortHumanDuration(max(d, 0))
}

// RevisionDigits is how many digits of a commit or content hash Revision keeps.
const RevisionDigits = 12

// Revision shortens a revision for a person, as git abbreviates a commit: a commit or content
// hash to its first RevisionDigits digits; "ref@hash" keeps its ref. Anything else (a branch
// name, a hash already short) is returned as it is.
func Revision(id string) string {
	prefix, hash := "", id
	if i := strings.LastIndexByte(id, '@'); i >= 0 {
		prefix, hash = id[:i+1], id[i+1:]
	}
	if len(hash) > RevisionDigits && strings.Trim(strings.ToLower(hash), "0123456789abcdef") == "" {
		hash = hash[:RevisionDigits]
	}
	return prefix + hash
}
