// Package progress paces the progress reports of long work: a Throttle lets one report through
// an interval, the first one interval after the work started, so that short work reports
// nothing and long work reports at a steady pace whatever the number of steps.
//
//	t := progress.NewThrottle(time.Second, time.Now)
//	for i := range items {
//		work(i)
//		if t.Due() {
//			fmt.Fprintf(os.Stderr, "[%d/%d]\n", i+1, len(items))
//		}
//	}
//
// The CLI's progress line and the daemon's progress log lines use it.
package progress
