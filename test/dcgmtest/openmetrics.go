package dcgmtest

import (
	"fmt"
	"strings"
	"time"
)

// Sample returns what g is doing at time t (its Util, memory, power...): history for
// [OpenMetrics], e.g. 0 % for 3 h, or a 5-minute burst each hour.
type Sample func(g GPU, t time.Time) GPU

// OpenMetrics returns the series of gpus from from to to (both included) every step, their
// values given by at (nil: the GPUs' own values), in the OpenMetrics text format that `promtool
// tsdb create-blocks-from openmetrics` reads: the same metric names, HELP, TYPE and labels as
// the exposition in style, a timestamp on each sample, each family's samples together and each
// series' in time order, ending with "# EOF".
func OpenMetrics(style LabelStyle, gpus []GPU, from, to time.Time, step time.Duration, at Sample) []byte {
	if step <= 0 {
		panic(fmt.Sprintf("dcgmtest.OpenMetrics: step %v is not positive", step))
	}
	var times []time.Time
	for t := from; !t.After(to); t = t.Add(step) {
		times = append(times, t)
	}
	// states[i][j] is gpus[i] at times[j]; at is called once per GPU and time.
	states := make([][]GPU, len(gpus))
	for i, g := range gpus {
		states[i] = make([]GPU, len(times))
		for j, t := range times {
			if at != nil {
				states[i][j] = at(g, t)
			} else {
				states[i][j] = g
			}
		}
	}
	var w strings.Builder
	for _, f := range families {
		header := false
		for i, g := range gpus {
			if _, ok := f.value(g); !ok {
				continue
			}
			if !header {
				writeHeader(&w, f)
				header = true
			}
			ls := labels(style, f, g)
			for j, t := range times {
				v, _ := f.value(states[i][j])
				if f.name == MetricXIDErrors { // its err_code and err_msg follow the value
					ls = labels(style, f, states[i][j])
				}
				writeSeries(&w, f.name, ls, v, fmt.Sprintf(" %d.%03d", t.Unix(), t.Nanosecond()/1e6))
			}
		}
	}
	w.WriteString("# EOF\n")
	return []byte(w.String())
}
