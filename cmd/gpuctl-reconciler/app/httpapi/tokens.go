package httpapi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// StaticTokens is a TokenSource read from a file like kube-apiserver's --token-auth-file: one
// token a line, "token,name[,admin]" or "token,name,namespaces=NS1;NS2":
//
//	s3cret-ops,ops,admin                        # sees every namespace, may ask for syncs
//	s3cret-ml,ml-team,namespaces=alice;ml-infra # sees these namespaces' jobs, logs, events, quotas
//	s3cret-board,dashboard,namespaces=*         # sees every namespace, may not ask for syncs
//	s3cret-old,someone                          # sees no namespace (pools, nodes, status only)
//
// A line without admin or namespaces= grants no namespace (least privilege: a token file written
// before namespaces existed keeps working, and its non-admin tokens see no team's jobs until
// their lines name namespaces). Blank lines and lines starting with # are ignored.
//
// The file is checked (one stat) on every lookup and read again when it has changed, so that
// rotating a mounted Secret takes effect without a restart. When the file is missing or
// invalid, every token is refused until it is fixed (fail closed).
type StaticTokens struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	stamp   fileStamp
	entries []tokenEntry
}

type tokenEntry struct {
	hash      [sha256.Size]byte
	principal Principal
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	info    os.FileInfo
	modTime time.Time
	size    int64
}

func (a fileStamp) same(b os.FileInfo) bool {
	return a.info != nil && os.SameFile(a.info, b) && a.modTime.Equal(b.ModTime()) && a.size == b.Size()
}

// LoadStaticTokens reads a token file; an unreadable or invalid file is an error. log, which
// may be nil, receives the errors of later reloads.
func LoadStaticTokens(path string, log *slog.Logger) (*StaticTokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &StaticTokens{path: path, log: log}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if err := t.load(info); err != nil {
		return nil, err
	}
	return t, nil
}

// Lookup returns the principal of a token. Every entry is compared, in constant time, with
// SHA-256 digests so that neither the position nor the length of a token leaks.
// A nil *StaticTokens knows no token.
func (t *StaticTokens) Lookup(token string) (Principal, bool) {
	if t == nil {
		return Principal{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refresh()
	h := sha256.Sum256([]byte(token))
	var found Principal
	ok := 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.principal, 1
		}
	}
	return found, ok == 1
}

// refresh reads the file again when it changed; t.mu is held.
func (t *StaticTokens) refresh() {
	info, err := os.Stat(t.path)
	if err != nil {
		if t.stamp.info != nil || t.entries != nil {
			t.log.Error("token file unreadable; refusing all tokens", "path", t.path, "err", err)
		}
		t.stamp, t.entries = fileStamp{}, nil
		return
	}
	if t.stamp.same(info) {
		return
	}
	if err := t.load(info); err != nil {
		t.log.Error("token file invalid; refusing all tokens until it is fixed", "err", err)
		return
	}
	t.log.Info("token file reloaded", "path", t.path, "tokens", len(t.entries))
}

// load reads and parses the file; on an error the entries are dropped.
func (t *StaticTokens) load(info os.FileInfo) error {
	t.stamp = fileStamp{info: info, modTime: info.ModTime(), size: info.Size()}
	data, err := os.ReadFile(t.path)
	if err == nil {
		t.entries, err = parseTokens(t.path, data)
	}
	if err != nil {
		t.entries = nil
		return err
	}
	return nil
}

// parseTokens parses a token file; the errors of all lines are joined, each with file:line.
func parseTokens(path string, data []byte) ([]tokenEntry, error) {
	var (
		entries []tokenEntry
		errs    []error
		seen    = map[[sha256.Size]byte]int{}
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseTokenLine(line)
		if err == nil && seen[e.hash] > 0 {
			err = fmt.Errorf("token repeated (first on line %d)", seen[e.hash])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, n, err))
			continue
		}
		seen[e.hash] = n
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", path, err))
	}
	return entries, errors.Join(errs...)
}

// namespacesField starts the third field of a token line that lists namespaces.
const namespacesField = "namespaces="

func parseTokenLine(line string) (tokenEntry, error) {
	fields := strings.Split(line, ",")
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	if len(fields) < 2 || len(fields) > 3 {
		return tokenEntry{}, errors.New(`want "token,name", "token,name,admin" or "token,name,namespaces=NS1;NS2"`)
	}
	if fields[0] == "" || fields[1] == "" {
		return tokenEntry{}, errors.New("empty token or name")
	}
	if strings.ContainsAny(fields[0], " \t") {
		return tokenEntry{}, errors.New("token contains white space")
	}
	p := Principal{Name: fields[1]}
	if len(fields) == 3 {
		var err error
		if p, err = parseGrant(p, fields[2]); err != nil {
			return tokenEntry{}, err
		}
	}
	return tokenEntry{hash: sha256.Sum256([]byte(fields[0])), principal: p}, nil
}

// parseGrant reads the third field of a token line: "admin", "namespaces=*" or
// "namespaces=NS1;NS2".
func parseGrant(p Principal, field string) (Principal, error) {
	if strings.EqualFold(field, "admin") {
		p.Admin = true
		return p, nil
	}
	list, ok := strings.CutPrefix(field, namespacesField)
	if !ok {
		return p, fmt.Errorf(`third field %q: want "admin" or "namespaces=NS1;NS2" (or "namespaces=*")`, field)
	}
	if strings.TrimSpace(list) == "*" {
		p.AllNamespaces = true
		return p, nil
	}
	for ns := range strings.SplitSeq(list, ";") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return p, fmt.Errorf("namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if !slices.Contains(p.Namespaces, ns) {
			p.Namespaces = append(p.Namespaces, ns)
		}
	}
	return p, nil
}
