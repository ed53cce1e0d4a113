// Package markdown holds the small escaping helpers of gpuctl's Markdown output (PR review
// comments, drift reports).
package markdown

// LongestBacktickRun is the length of the longest run of backticks in s: a code span or fence
// around s needs one more.
func LongestBacktickRun(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
