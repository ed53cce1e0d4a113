package drift

import "time"

// Transition is what happened to an item, as a history entry records it: it appeared,
// changed, was resolved, corrected, ... (the JSON field "change" of an entry).
type Transition string

// The transitions a history records.
const (
	// Detected: a new difference.
	Detected Transition = "detected"
	// Changed: an item's fields, values or manager changed.
	Changed Transition = "changed"
	// Resolved: the difference is gone (reverted by hand, Git changed, or the object left
	// the managed set).
	Resolved Transition = "resolved"
	// Corrected: gpuctl repaired it (--drift=correct).
	Corrected Transition = "corrected"
	// ShadowDeleted: gpuctl deleted a shadow workload (--drift-delete-shadow).
	ShadowDeleted Transition = "shadow-deleted"
	// TakenBack: a sync of a revision that changes the object took back the fields another
	// manager had taken (Git wins on the fields it declares), in either mode.
	TakenBack Transition = "taken-back"
)

// Entry is one change to the report.
type Entry struct {
	Time   time.Time  `json:"time"`
	Change Transition `json:"change"`
	// Item is the item as it was at that time (for resolved: as it was last seen).
	Item Item `json:"item"`
	// Reason says why a resolved item resolved, in a few words: "completed", "deleted",
	// "matches Git again", "no longer in Git", "now in Git", ... (empty for other changes).
	Reason string `json:"reason,omitempty"`
}

// Text is the change as a person reads it: "detected", or for a resolved entry with its
// reason "resolved: completed".
func (e Entry) Text() string {
	if e.Reason == "" {
		return string(e.Change)
	}
	return string(e.Change) + ": " + e.Reason
}

// DefaultHistory is the number of entries a history keeps by default.
const DefaultHistory = 200

// History is a bounded list of entries, oldest first.
type History struct {
	Max     int
	Entries []Entry
}

// Add appends an entry and drops the oldest beyond Max.
func (h *History) Add(e Entry) {
	h.Entries = append(h.Entries, e)
	max := h.Max
	if max <= 0 {
		max = DefaultHistory
	}
	if n := len(h.Entries); n > max {
		h.Entries = append([]Entry(nil), h.Entries[n-max:]...)
	}
}

// Since returns a copy of the report with the history entries of the last d attached (all
// of them when d is 0) and the items detected before that still listed: current drift is
// always shown, however old.
func (r Report) Since(entries []Entry, d time.Duration, now time.Time) Report {
	out := r
	out.History = nil
	for _, e := range entries {
		if d == 0 || !e.Time.Before(now.Add(-d)) {
			out.History = append(out.History, e)
		}
	}
	return out
}
