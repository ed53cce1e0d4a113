package app

import "testing"

func TestUnifiedDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	b := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\n"
	want := `--- old
+++ new
@@ -1,10 +1,11 @@
 a
 b
 c
-d
+D
 e
 f
 g
 h
 i
 j
+k
`
	if got := unifiedDiff("old", "new", a, b); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("x", "y", a, a); got != "" {
		t.Fatalf("equal texts gave %q", got)
	}
	long := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	changed := "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n"
	wantTwo := `--- a
+++ b
@@ -1,5 +1,5 @@
 1
-2
+X
 3
 4
 5
@@ -8,5 +8,5 @@
 8
 9
 10
-11
+Y
 12
`
	if got := unifiedDiff("a", "b", long, changed); got != wantTwo {
		t.Fatalf("two hunks: got\n%s", got)
	}
	if got := unifiedDiff("a", "b", "", "x\n"); got != "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n" { // as diff -u and git number an empty range
		t.Fatalf("creation: %q", got)
	}
}
