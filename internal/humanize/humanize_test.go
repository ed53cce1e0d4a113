package humanize

import (
	"testing"
	"time"
)

func TestPlural(t *testing.T) {
	tests := map[string]struct {
		got, want string
	}{
		"zero":                {Plural(0, "GPU"), "0 GPUs"},
		"one":                 {Plural(1, "GPU"), "1 GPU"},
		"many":                {Plural(int64(8), "GPU"), "8 GPUs"},
		"irregular":           {Plural(2, "item is", "items are"), "2 items are"},
		"one of an irregular": {Plural(1, "item is", "items are"), "1 item is"},
	}
	for name, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", name, tc.got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		312475106 * time.Nanosecond:         "312ms",
		999 * time.Microsecond:              "999µs",
		2345 * time.Millisecond:             "2.3s",
		65432 * time.Millisecond:            "1m5s",
		3*time.Hour + 1500*time.Millisecond: "3h0m2s",
		0:                                   "0s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		37 * time.Second:               "37s",
		5*time.Minute + 59*time.Second: "5m",
		3*time.Hour + 10*time.Minute:   "3h",
		50 * time.Hour:                 "2d",
		-time.Minute:                   "0s",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRevision(t *testing.T) {
	for in, want := range map[string]string{
		"":            "",
		"main":        "main",
		"main@abc123": "main@abc123",
		"main@0123456789abcdef0123456789abcdef01234567": "main@0123456789ab",
		"0123456789abcdef0123456789abcdef01234567":      "0123456789ab",
		"0123456789ABCDEF0123456789ABCDEF01234567":      "0123456789AB",
		"0123456789ab":                   "0123456789ab",
		"local@sha256-not-a-hash-really": "local@sha256-not-a-hash-really",
	} {
		if got := Revision(in); got != want {
			t.Errorf("Revision(%q) = %q, want %q", in, got, want)
		}
	}
}
