package forge

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"
)

// Kind names a forge's API.
type Kind string

// The forges.
const (
	GitHub    Kind = "github"
	GitLab    Kind = "gitlab"
	Gitea     Kind = "gitea" // Gitea and Forgejo
	Bitbucket Kind = "bitbucket"
)

// Kinds lists the forges, for flags' help and errors.
var Kinds = []Kind{GitHub, GitLab, Gitea, Bitbucket}

// State is a commit status, in gpuctl's words; each forge has its own spelling.
type State string

// The states of a commit status.
const (
	// StatePending: a sync of the commit is under way.
	StatePending State = "pending"
	// StateSuccess: the commit is applied.
	StateSuccess State = "success"
	// StateFailure: the commit is not applied because of what it holds (a bad file).
	StateFailure State = "failure"
	// StateError: the sync failed for another reason (the cluster, the daemon).
	StateError State = "error"
)

// DefaultContext is the status context (GitLab's name, Bitbucket's key) when none is set.
const DefaultContext = "gpuctl"

// Options configure a Reporter.
type Options struct {
	// Kind is the forge; "" guesses it from the Git URL's host (github.com, gitlab.com,
	// bitbucket.org) and is an error for another host.
	Kind Kind
	// APIURL is the API's base; "" for the forge's own: https://api.github.com,
	// https://gitlab.com/api/v4, https://HOST/api/v1 (Gitea), https://api.bitbucket.org/2.0.
	APIURL string
	// TokenFile holds the token (surrounding white space ignored). It is read once, by New;
	// the token is never logged and never part of an error.
	TokenFile string
	// Context tells gpuctl's statuses from others on the same commit (GitHub's and Gitea's
	// context, GitLab's name, Bitbucket's key and name); DefaultContext when "".
	Context string
	// TargetURL is the link of each status; "" for none (Bitbucket requires one: the
	// repository's web page is used).
	TargetURL string
	// HTTPClient sends the requests; nil for one with a 10 s timeout that follows no
	// redirect (a header token must not travel to another host).
	HTTPClient *http.Client
	// Retry is the backoff of a status that could not be posted; zero fields take
	// DefaultRetryOptions' values.
	Retry RetryOptions
	// Log receives what could not be posted; nil discards.
	Log *slog.Logger
}

// RetryOptions is the backoff of a status whose post failed (a network error, a 5xx, a
// 429): the first retry after Initial, each next one after twice as long up to Max (or
// after the forge's Retry-After), until GiveUp after the status was queued.
type RetryOptions struct {
	Initial time.Duration
	Max     time.Duration
	GiveUp  time.Duration
}

// DefaultRetryOptions: 1 s, doubling to 5 min, given up after 30 min.
func DefaultRetryOptions() RetryOptions {
	return RetryOptions{Initial: time.Second, Max: 5 * time.Minute, GiveUp: 30 * time.Minute}
}

// New returns a Reporter for the repository of gitURL. It reads the token file and parses
// the URL now, so a bad flag fails at start; statuses are sent once Run runs.
func New(o Options, gitURL string) (*Reporter, error) {
	repo, err := parseRepository(gitURL)
	if err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	if o.Kind == "" {
		k, ok := hostKinds[repo.host]
		if !ok {
			return nil, fmt.Errorf("forge: the forge of %s is not known from its host: set it (one of %s)", repo.host, kindList())
		}
		o.Kind = k
	}
	if _, ok := apis[o.Kind]; !ok {
		return nil, fmt.Errorf("forge: unknown forge %q (want one of %s)", o.Kind, kindList())
	}
	if repo, err = repo.forKind(o.Kind, gitURL); err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	token, err := readToken(o.TokenFile)
	if err != nil {
		return nil, err
	}
	if o.APIURL == "" {
		o.APIURL = apis[o.Kind].defaultURL(repo)
	}
	o.APIURL = strings.TrimRight(o.APIURL, "/")
	if !strings.HasPrefix(o.APIURL, "https://") && !strings.HasPrefix(o.APIURL, "http://") {
		return nil, fmt.Errorf("forge: API URL %s: want an http(s) URL", shown(o.APIURL))
	}
	if o.Context == "" {
		o.Context = DefaultContext
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	def := DefaultRetryOptions()
	if o.Retry.Initial <= 0 {
		o.Retry.Initial = def.Initial
	}
	if o.Retry.Max <= 0 {
		o.Retry.Max = def.Max
	}
	if o.Retry.GiveUp <= 0 {
		o.Retry.GiveUp = def.GiveUp
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return newReporter(o, repo, token), nil
}

// readToken reads the token file. Errors name the file, never what it holds.
func readToken(file string) (string, error) {
	if file == "" {
		return "", errors.New("forge: a token file is required")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("forge: token file: %w", err)
	}
	token := string(bytes.TrimSpace(b))
	if token == "" {
		return "", fmt.Errorf("forge: token file %s is empty", file)
	}
	if strings.IndexFunc(token, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return "", fmt.Errorf("forge: token file %s: the token holds white space or control characters (one token on one line is expected)", file)
	}
	return token, nil
}

// kindList is the forges, comma-separated.
func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
