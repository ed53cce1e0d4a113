package app

import (
	"fmt"
	"strings"
)

// unifiedDiff returns a unified diff (3 lines of context) of two texts, or "" when they are
// equal. Objects are small, so a longest-common-subsequence table is fast enough.
func unifiedDiff(from, to, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	ops := lineOps(al, bl)
	hunks := groupHunks(ops, 3)
	if len(hunks) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, to)
	for _, h := range hunks {
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", hunkStart(h.aStart, h.aLen), h.aLen, hunkStart(h.bStart, h.bLen), h.bLen)
		for _, op := range h.ops {
			sb.WriteByte(op.kind)
			sb.WriteString(op.line)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// hunkStart is the first line of a hunk's range as diff numbers it (from 1); an empty range
// names the line before it, as diff -u and git do ("@@ -0,0 +1,8 @@" for a new file).
func hunkStart(start, n int) int {
	if n == 0 {
		return start
	}
	return start + 1
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

type lineOp struct {
	kind byte // ' ', '-', '+'
	line string
	a, b int // line numbers (from 0) in a and b before this op
}

// lineOps aligns two line lists on their longest common subsequence.
func lineOps(a, b []string) []lineOp {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, lineOp{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, lineOp{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, lineOp{'+', b[j], i, j})
			j++
		}
	}
	return ops
}

type hunk struct {
	aStart, aLen, bStart, bLen int
	ops                        []lineOp
}

// groupHunks keeps the changed lines with ctx lines of context around them.
func groupHunks(ops []lineOp, ctx int) []hunk {
	var hunks []hunk
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			next := end // the next change within 2*ctx lines joins this hunk
			for next < len(ops) && ops[next].kind == ' ' && next-end < 2*ctx {
				next++
			}
			if next < len(ops) && ops[next].kind != ' ' {
				end = next
				continue
			}
			break
		}
		end = min(len(ops), end+ctx)
		h := hunk{aStart: ops[start].a, bStart: ops[start].b, ops: ops[start:end]}
		for _, op := range h.ops {
			if op.kind != '+' {
				h.aLen++
			}
			if op.kind != '-' {
				h.bLen++
			}
		}
		hunks = append(hunks, h)
		i = end
	}
	return hunks
}
