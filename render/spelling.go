package render

import (
	"strings"
	"unicode"
)

// Spellings returns the accepted spellings of a field named in its documented spelling, the
// documented one first: pausedReplicas, paused-replicas, paused_replicas.
func Spellings(name string) []string { return spellings(name) }

// spellings returns the accepted spellings of a field named in its documented spelling: the name
// itself plus its kebab-case, snake_case and camelCase forms (gpu-type, gpu_type, gpuType).
func spellings(name string) []string {
	words := splitWords(name)
	if len(words) < 2 {
		return []string{name}
	}
	camel := words[0]
	for _, w := range words[1:] {
		camel += strings.ToUpper(w[:1]) + w[1:]
	}
	out := []string{name}
	for _, s := range []string{strings.Join(words, "-"), strings.Join(words, "_"), camel} {
		if s != name {
			out = append(out, s)
		}
	}
	return out
}

// splitWords splits gpu-type, gpu_type and gpuType alike into lower-case words.
func splitWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range name {
		switch {
		case r == '-' || r == '_':
			flush()
		case unicode.IsUpper(r):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}

// normalize folds case and separators so that near-spellings compare equal.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '-' || r == '_' || r == ' ' {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// suggest returns the candidate closest to got, or "" when none is close enough.
func suggest(got string, candidates []string) string {
	g := normalize(got)
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		d := editDistance(g, normalize(c))
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 1 + len(g)/4
	if limit > 3 {
		limit = 3
	}
	if bestDist <= limit {
		return best
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions, deletions, substitutions
// and transpositions of two adjacent letters each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 20
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
