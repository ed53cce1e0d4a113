package markdown

import "testing"

func TestLongestBacktickRun(t *testing.T) {
	for s, want := range map[string]int{"": 0, "plain": 0, "a`b": 1, "``x`": 2, "x```y``": 3} {
		if got := LongestBacktickRun(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}
