// Package humanize is how gpuctl writes counts, durations, ages and revisions for a person: on
// the web page, in the CLI's text output, in logs and in drift and review reports. Each exists
// once, so that "1 GPU", "312ms", "37s" and "main@0123456789ab" read the same everywhere.
//
//	humanize.Plural(1, "GPU")                   // "1 GPU"
//	humanize.Plural(3, "item is", "items are")  // "3 items are"
//	humanize.Duration(312475106 * time.Nanosecond) // "312ms"
//	humanize.Age(37 * time.Second)              // "37s", as kubectl's AGE column
//	humanize.Revision("main@0123456789abcdef…") // "main@0123456789ab"
package humanize
