package forge

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
)

// maxQueued bounds the statuses waiting (one per commit): past it the oldest is dropped.
const maxQueued = 100

// maxRemembered bounds the commits whose last posted status is remembered, to post the same
// status of a commit once.
const maxRemembered = 256

// status is one status of a commit.
type status struct {
	state       State
	description string
}

// pending is a status waiting to be posted.
type pending struct {
	sha     string
	status  status
	queued  time.Time // when it was reported: it is given up Retry.GiveUp later
	next    time.Time // when it may be posted
	attempt int       // posts that failed
}

// Reporter posts commit statuses of one repository. Report queues; Run posts. Its methods
// are safe for concurrent use.
type Reporter struct {
	kind    Kind
	apiURL  string
	repo    repository
	token   string
	context string
	target  string
	client  *http.Client
	retry   RetryOptions
	log     *slog.Logger
	now     func() time.Time

	mu       sync.Mutex
	queue    []*pending        // at most one per commit
	inflight *pending          // being posted
	posted   map[string]status // the last status posted, per commit
	order    []string          // posted's commits, oldest first
	wake     chan struct{}     // a status was queued
	changed  chan struct{}     // closed (and replaced) when the queue shrinks
}

// newReporter returns a Reporter of checked options.
func newReporter(o Options, repo repository, token string) *Reporter {
	return &Reporter{kind: o.Kind, apiURL: o.APIURL, repo: repo, token: token, context: o.Context,
		target: o.TargetURL, client: o.HTTPClient, retry: o.Retry, now: time.Now,
		log:    o.Log.With("forge", string(o.Kind), "repository", repo.path),
		posted: map[string]status{}, wake: make(chan struct{}, 1), changed: make(chan struct{})}
}

// Kind is the forge the Reporter posts to.
func (r *Reporter) Kind() Kind { return r.kind }

// Repository is the repository's path on the forge (owner/repo; GitLab: group/project).
func (r *Reporter) Repository() string { return r.repo.path }

// Report queues state on commit sha and returns at once. A status of sha still queued is
// replaced; the status last posted on sha is not posted again. The description is made one
// line and cut to the forge's limit with "…".
func (r *Reporter) Report(sha string, state State, description string) {
	if _, ok := apis[r.kind].states[state]; !ok || sha == "" {
		r.log.Error("commit status not posted: no commit or an unknown state", "sha", sha, "state", string(state))
		return
	}
	s := status{state: state, description: trim(description, apis[r.kind].descLimit)}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range r.queue {
		if p.sha == sha {
			if r.inflight == nil || r.inflight.sha != sha || !r.same(r.inflight.status, s) {
				r.queue[i] = &pending{sha: sha, status: s, queued: now, next: now}
			} else { // the same status is being posted: the queued one is stale
				r.queue = append(r.queue[:i], r.queue[i+1:]...)
				r.signalChanged()
			}
			r.signalWake()
			return
		}
	}
	if last, ok := r.posted[sha]; ok && r.same(last, s) && (r.inflight == nil || r.inflight.sha != sha) {
		return
	}
	if r.inflight != nil && r.inflight.sha == sha && r.same(r.inflight.status, s) {
		return
	}
	if len(r.queue) >= maxQueued {
		r.log.Warn("commit status not posted: too many waiting", "sha", r.queue[0].sha, "state", string(r.queue[0].status.state))
		r.queue = r.queue[1:]
	}
	r.queue = append(r.queue, &pending{sha: sha, status: s, queued: now, next: now})
	r.signalWake()
}

// Run posts the queued statuses until ctx is done; start it once, in its own goroutine.
// Statuses reported before Run starts wait for it.
func (r *Reporter) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p, wait := r.take()
		if p != nil {
			o := r.post(ctx, p)
			if ctx.Err() != nil { // stopped mid-post: the status waits for the next Run
				r.finish(p, outcome{err: ctx.Err(), retry: true})
				return
			}
			r.finish(p, o)
			continue
		}
		var tick <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-tick:
		}
	}
}

// Flush waits until no status is queued or being posted (Run must be running), or until
// ctx is done.
func (r *Reporter) Flush(ctx context.Context) error {
	for {
		r.mu.Lock()
		idle, changed := len(r.queue) == 0 && r.inflight == nil, r.changed
		r.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// take removes the status due first from the queue and marks it in flight; or, when none
// is due, says how long until one is (0: none is queued).
func (r *Reporter) take() (*pending, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return nil, 0
	}
	first := 0
	for i, p := range r.queue {
		if p.next.Before(r.queue[first].next) {
			first = i
		}
	}
	p := r.queue[first]
	if wait := p.next.Sub(r.now()); wait > 0 {
		return nil, wait
	}
	r.queue = append(r.queue[:first], r.queue[first+1:]...)
	r.inflight = p
	return p, 0
}

// finish records the outcome of posting p: posted, queued again after a backoff, or dropped.
func (r *Reporter) finish(p *pending, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.signalChanged()
	r.inflight = nil
	log := r.log.With("sha", p.sha, "state", string(p.status.state))
	switch {
	case o.err == nil:
		r.remember(p.sha, p.status)
		return
	case !o.retry:
		log.Error("commit status not posted", "error", o.err)
		return
	}
	for _, q := range r.queue {
		if q.sha == p.sha {
			return // a newer status of the commit is queued: it replaces this one
		}
	}
	p.attempt++
	delay := o.retryAfter
	if delay <= 0 {
		delay = r.retry.Initial << min(p.attempt-1, 30)
		if delay > r.retry.Max || delay <= 0 {
			delay = r.retry.Max
		}
	}
	p.next = r.now().Add(delay)
	if p.next.Sub(p.queued) > r.retry.GiveUp {
		log.Error("commit status not posted: given up", "attempts", p.attempt, "error", o.err)
		return
	}
	log.Warn("commit status not posted: will retry", "attempt", p.attempt, "retryIn", delay.String(), "error", o.err)
	r.queue = append(r.queue, p)
}

// same reports whether b says nothing a, posted on the same commit, did not. On GitLab a
// status is its state: GitLab refuses to set a state the status already has (400 "Cannot
// transition status via :run from :running"), whatever the description.
func (r *Reporter) same(a, b status) bool {
	if r.kind == GitLab {
		return apis[GitLab].states[a.state] == apis[GitLab].states[b.state]
	}
	return a == b
}

// remember records s as the last status posted on sha, forgetting the oldest commit past
// maxRemembered.
func (r *Reporter) remember(sha string, s status) {
	if _, ok := r.posted[sha]; !ok {
		r.order = append(r.order, sha)
		if len(r.order) > maxRemembered {
			delete(r.posted, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.posted[sha] = s
}

// signalWake tells Run a status was queued. Called with mu held.
func (r *Reporter) signalWake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// signalChanged tells Flush the queue changed. Called with mu held.
func (r *Reporter) signalChanged() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// trim makes description one line of at most limit characters, its end replaced by "…"
// when cut.
func trim(description string, limit int) string {
	d := strings.Join(strings.FieldsFunc(description, func(c rune) bool {
		return c == '\n' || c == '\r' || c == '\t' || unicode.IsControl(c)
	}), " ")
	d = strings.TrimSpace(d)
	runes := []rune(d)
	if len(runes) <= limit {
		return d
	}
	return strings.TrimRight(string(runes[:limit-1]), " ") + "…"
}
