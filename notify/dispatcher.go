package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DispatcherOptions are a Dispatcher's settings; the zero value of each field is its default.
type DispatcherOptions struct {
	// HTTPClient posts the messages; default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Log receives what could not be delivered, each provider named by its name; default:
	// nothing is logged.
	Log *slog.Logger
	// Now is the clock of dedupe and the rate limit; default time.Now.
	Now func() time.Time
	// RatePerMinute is the most messages a provider gets in a minute (a token bucket of that
	// size, refilled evenly); default 20.
	RatePerMinute int
	// Cluster names the cluster in messages, for Events without one.
	Cluster string
	// QueueSize is how many messages wait for a provider; beyond, the oldest is dropped;
	// default 100.
	QueueSize int
	// Retries are the further attempts of a failed delivery (a network error, 429 or 5xx),
	// after RetryBackoff, doubled each time; defaults 3 (a negative Retries: none) and 1 s.
	Retries      int
	RetryBackoff time.Duration
}

// Dispatcher is the Sender of alerts: it routes each Event to the providers of the routes
// that match it, sends a condition (an Event's Namespace and Key) once per route until it is
// resolved, rate-limits each provider and posts in the background, one goroutine per
// provider. Send never blocks on a provider. Close stops it.
type Dispatcher struct {
	cfg     *Config
	o       DispatcherOptions
	targets map[string]*target
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu sync.Mutex
	// open holds the conditions open on each route (its index).
	open []map[condition]openCondition
}

// openCondition is a condition open on a route: when it was last sent, and whether an Event
// closing it was dropped by the rate limit (then the next Event that opens it is sent as a
// new one, and the next that closes it is tried again).
type openCondition struct {
	sent    time.Time
	closing bool
}

// condition is what an Event opens or closes.
type condition struct{ namespace, key string }

// target is a provider with its queue, its limiter and the counts of what was dropped.
type target struct {
	p       Provider
	enc     encoder
	limiter *rate.Limiter
	// under Dispatcher.mu:
	queue             []message
	busy              bool
	droppedRate, full int
	wake              chan struct{}
}

// NewDispatcher starts a Dispatcher of cfg's providers and routes.
func NewDispatcher(cfg *Config, o DispatcherOptions) *Dispatcher {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RatePerMinute <= 0 {
		o.RatePerMinute = 20
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 100
	}
	switch {
	case o.Retries == 0:
		o.Retries = 3
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	d := &Dispatcher{cfg: cfg, o: o, targets: map[string]*target{}, open: make([]map[condition]openCondition, len(cfg.Routes))}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for i := range d.open {
		d.open[i] = map[condition]openCondition{}
	}
	for _, p := range cfg.Providers {
		t := &target{p: p, limiter: rate.NewLimiter(rate.Limit(float64(o.RatePerMinute)/60), o.RatePerMinute), wake: make(chan struct{}, 1)}
		switch p.Type {
		case ProviderSlack:
			t.enc = slack{}
		case ProviderTeams:
			t.enc = teams{}
		default:
			t.enc = webhook{secret: p.Secret}
		}
		d.targets[p.Name] = t
		d.wg.Add(1)
		go d.deliver(t)
	}
	return d
}

// Send routes e: for each route that matches it, an opening Event (Resolved false) of a
// condition already open on the route is dropped unless RepeatInterval has passed since it
// was sent; a Resolved Event of a condition not open is dropped (nothing to recover from);
// an Event without a Key is always sent. What passes is queued for the route's provider, or
// dropped and counted when the provider's rate is spent: a dropped opening Event leaves the
// condition closed, so the next Event of it is tried again; a dropped closing Event leaves it
// open but closing, so a later closing Event is tried again and the next opening Event is
// sent as new (a DriftResolved is sent once: its loss must not silence that drift for good).
func (d *Dispatcher) Send(e Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return
	}
	now := d.o.Now()
	if e.Time.IsZero() {
		e.Time = now
	}
	if e.Cluster == "" {
		e.Cluster = d.o.Cluster
	}
	c := condition{e.Namespace, e.Key}
	// A provider of several matching routes gets one message, or one drop: its verdict.
	verdict := map[string]bool{}
	for i, r := range d.cfg.Routes {
		if !r.Matches(e) {
			continue
		}
		oc, open := d.open[i][c]
		switch {
		case e.Key == "":
		case e.Resolved && !open:
			continue
		case !e.Resolved && open && !oc.closing && (d.cfg.RepeatInterval == 0 || now.Sub(oc.sent) < d.cfg.RepeatInterval):
			continue
		}
		ok, decided := verdict[r.Provider]
		if !decided {
			t := d.targets[r.Provider]
			if ok = t.limiter.AllowN(now, 1); ok {
				d.enqueue(t, e)
			} else {
				t.droppedRate++
			}
			verdict[r.Provider] = ok
		}
		switch {
		case e.Key == "":
		case !ok:
			if e.Resolved {
				oc.closing = true
				d.open[i][c] = oc
			}
		case e.Resolved:
			delete(d.open[i], c)
		default:
			d.open[i][c] = openCondition{sent: now}
		}
	}
}

// enqueue queues a message of e for t, dropping the oldest when the queue is full; under mu.
func (d *Dispatcher) enqueue(t *target, e Event) {
	if len(t.queue) == d.o.QueueSize {
		t.queue = t.queue[1:]
		t.full++
	}
	t.queue = append(t.queue, message{Event: e, Delivery: newUUID(), DroppedRate: t.droppedRate, DroppedQueue: t.full})
	t.droppedRate, t.full = 0, 0
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// deliver posts t's messages in order until the Dispatcher is closed.
func (d *Dispatcher) deliver(t *target) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		if len(t.queue) == 0 {
			t.busy = false
			d.mu.Unlock()
			select {
			case <-d.ctx.Done():
				return
			case <-t.wake:
				continue
			}
		}
		m := t.queue[0]
		t.queue = t.queue[1:]
		t.busy = true
		d.mu.Unlock()
		if err := d.post(t, m); err != nil {
			d.o.Log.Error("alert not delivered", "provider", t.p.Name, "reason", string(m.Reason), "key", m.Key, "delivery", m.Delivery, "err", err)
		}
	}
}

// post delivers m to t, retrying a network error, 429 and 5xx with backoff. Its errors name
// neither the URL nor the key.
func (d *Dispatcher) post(t *target, m message) error {
	body, header, err := t.enc.encode(m)
	if err != nil {
		return err
	}
	backoff := d.o.RetryBackoff
	for attempt := 0; ; attempt++ {
		err = d.postOnce(t, body, header)
		if err == nil {
			return nil
		}
		if _, final := err.(*finalError); final || attempt >= d.o.Retries {
			return fmt.Errorf("%s: %d attempts: %w", t.p.Name, attempt+1, err)
		}
		select {
		case <-d.ctx.Done():
			return fmt.Errorf("%s: closed: %w", t.p.Name, err)
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// finalError is a response that a retry would not change (4xx but 429).
type finalError struct{ status string }

func (e *finalError) Error() string { return "the provider answered " + e.status }

func (d *Dispatcher) postOnce(t *target, body []byte, header http.Header) error {
	req, err := http.NewRequestWithContext(d.ctx, http.MethodPost, t.p.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the request could not be made") // its error would quote the URL
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := d.o.HTTPClient.Do(req)
	if err != nil {
		return redact(err, t.p.URL)
	}
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("the provider answered %s", resp.Status)
	default:
		return &finalError{resp.Status}
	}
}

// Flush waits until every queued message was delivered or given up, or ctx is done.
func (d *Dispatcher) Flush(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		d.mu.Lock()
		idle := true
		for _, t := range d.targets {
			idle = idle && len(t.queue) == 0 && !t.busy
		}
		d.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops the Dispatcher: what is queued is dropped, a post under way is cancelled.
// Send after Close drops the Event.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.cancel()
	d.mu.Unlock()
	d.wg.Wait()
}

// redact is err of a request without the URL, which is a secret: the url.Error's own error,
// with any copy of the URL cut out.
func redact(err error, u string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := strings.ReplaceAll(err.Error(), u, "<url>")
	if p, perr := url.Parse(u); perr == nil && p.Path != "" && p.Path != "/" {
		msg = strings.ReplaceAll(msg, p.Path, "<path>")
	}
	return errors.New(msg)
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
