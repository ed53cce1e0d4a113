package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpuctl/gpuctl/internal/cores"
	"github.com/gpuctl/gpuctl/internal/keys"
)

// idBytes is how many bytes of the tree's sha256 make a revision ID (40 hex digits).
const idBytes = 20

// racyWindow: a file hashed less than this long after its mtime may be written again without
// its size or mtime changing (timestamps are coarse: a few ms on Linux, 1 s on HFS+, 2 s on
// FAT), so its cached hash is not trusted and it is read again by the next Fetch. This is
// Git's "racy clean" problem.
const racyWindow = 2 * time.Second

// cached is the content hash of one file with the stat data it was computed for.
type cached struct {
	target string // the file read: the path itself, or a symlink's resolved target
	size   int64
	mtime  time.Time
	sum    [sha256.Size]byte
	racy   bool // hashed within racyWindow of mtime: read again next time
}

// digest is what the revision ID covers for one file besides its path.
type digest struct {
	sum  [sha256.Size]byte
	exec bool
}

// ignored reports whether a file or directory name is left out of hashing and watching:
// dot-files and dot-directories (.git, .file.yaml.swp) and editors' backup and temporary files
// (file.yaml~, #file.yaml#, JetBrains' file.yaml___jb_tmp___ and file.yaml___jb_old___) — but
// not .gpuctl.yaml, the configuration that the render reads (namespace rules, tenancy,
// queueing): an edit of it is a new revision, synced at once.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") && name != keys.ConfigFile ||
		strings.HasSuffix(name, "~") ||
		len(name) > 1 && strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#") ||
		strings.HasSuffix(name, "___jb_tmp___") ||
		strings.HasSuffix(name, "___jb_old___")
}

// hidden reports whether any element of a relative path is ignored. The root itself (".") is
// not hidden.
func hidden(rel string) bool {
	if rel == "." {
		return false
	}
	for _, el := range strings.Split(filepath.ToSlash(rel), "/") {
		if ignored(el) {
			return true
		}
	}
	return false
}

// within reports whether path is root or below it; both must be clean and absolute.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// relSlash returns path relative to root, slash-separated.
func relSlash(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

// listed is a file found by a walk: its path relative to Root (slash-separated) and the path
// that is read (itself, or a symlink's resolved target).
type listed struct{ rel, target string }

// walk lists the files below dir (Root or a directory in it) that are hashed: not hidden,
// regular or a symlink that follow resolves; devices, pipes and sockets are left out.
func (s *Source) walk(ctx context.Context, dir string, warned map[string]bool) ([]listed, error) {
	var list []listed
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == s.real {
			return nil
		}
		if ignored(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if f, ok := s.entry(p, d.Type(), warned); ok {
			list = append(list, f)
		}
		return nil
	})
	return list, err
}

// entry says whether the path p, of type typ and not hidden, is a file that is hashed, and
// what is read for it.
func (s *Source) entry(p string, typ fs.FileMode, warned map[string]bool) (listed, bool) {
	rel := relSlash(s.real, p)
	target := p
	switch {
	case typ.IsDir():
		return listed{}, false
	case typ&fs.ModeSymlink != 0:
		var ok bool
		if target, ok = s.follow(p, rel, warned); !ok {
			return listed{}, false
		}
	case !typ.IsRegular():
		return listed{}, false // devices, pipes, sockets
	}
	return listed{rel, target}, true
}

// hashed is the outcome of hashing one listed file.
type hashed struct {
	dg  digest
	c   cached
	ok  bool
	err error
}

// hashAll hashes the listed files on every core (10,000 files are most of a full fetch) and
// counts the files read in s.reads.
func (s *Source) hashAll(ctx context.Context, list []listed) []hashed {
	results := make([]hashed, len(list))
	bufs := make([][]byte, cores.Workers(len(list)))
	var reads atomic.Int64
	cores.EachWorker(len(list), func(w, i int) {
		if results[i].err = ctx.Err(); results[i].err != nil {
			return
		}
		if bufs[w] == nil {
			bufs[w] = make([]byte, 32<<10)
		}
		r := &results[i]
		var read bool
		r.dg, r.c, r.ok, read, r.err = s.hash(list[i].rel, list[i].target, bufs[w])
		if read {
			reads.Add(1)
		}
	})
	s.reads = int(reads.Load())
	return results
}

// scan walks the tree and returns the digest of every file by slash-separated relative path.
// Files whose size and mtime match the cache are not read. On success the cache is replaced by
// the files seen; on failure what was read is added to it.
func (s *Source) scan(ctx context.Context) (map[string]digest, error) {
	warned := map[string]bool{}
	list, err := s.walk(ctx, s.real, warned)
	if err != nil {
		return nil, err
	}
	results := s.hashAll(ctx, list)
	files := make(map[string]digest, len(list))
	next := make(map[string]cached, len(list))
	for i, r := range results {
		if err == nil && r.err != nil {
			err = r.err // the first in the walk's order
		}
		if r.err == nil && r.ok {
			files[list[i].rel], next[list[i].rel] = r.dg, r.c
		}
	}
	if err != nil {
		maps.Copy(s.cache, next)
		return nil, err
	}
	s.cache = next
	maps.DeleteFunc(s.warned, func(rel, _ string) bool { return !warned[rel] })
	s.links = map[string]bool{}
	s.noteLinks(list)
	return files, nil
}

// rescan is scan for a tree of which only the paths in dirty (absolute, below Root) may have
// changed since the files of prev were hashed (the watch's events say which): each dirty path
// is looked at again — a file hashed, a directory walked, a path that is gone dropped with
// everything below it — and so is every symlink, whose target may have changed elsewhere.
func (s *Source) rescan(ctx context.Context, prev map[string]digest, dirty []string) (map[string]digest, error) {
	files := maps.Clone(prev)
	for rel := range s.links {
		dirty = append(dirty, filepath.Join(s.real, filepath.FromSlash(rel)))
	}
	var list []listed
	var dirs []string           // paths that may have had files below them: forgotten at once
	warned := map[string]bool{} // paths outside dirty keep their warnings
	for rel := range s.warned {
		warned[rel] = true
	}
	for _, p := range dirty {
		rel := relSlash(s.real, p)
		if hidden(rel) {
			continue
		}
		_, wasFile := files[rel]
		delete(files, rel) // found again below, unless it is gone
		delete(s.links, rel)
		delete(warned, rel)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if delete(s.cache, rel); !wasFile {
				dirs = append(dirs, rel)
				dropBelow(warned, rel)
			}
		case err != nil:
			return nil, err
		case fi.IsDir():
			dirs = append(dirs, rel)
			dropBelow(warned, rel) // the walk warns again
			found, err := s.walk(ctx, p, warned)
			if err != nil {
				return nil, err
			}
			list = append(list, found...)
		default:
			if f, ok := s.entry(p, fi.Mode().Type(), warned); ok {
				list = append(list, f)
			}
		}
	}
	s.forget(files, dirs)
	for i, r := range s.hashAll(ctx, list) {
		if r.err != nil {
			return nil, r.err
		}
		if r.ok {
			files[list[i].rel], s.cache[list[i].rel] = r.dg, r.c
		}
	}
	s.noteLinks(list)
	maps.DeleteFunc(s.warned, func(rel, _ string) bool { return !warned[rel] })
	return files, nil
}

// forget drops what is known of the paths below the directories dirs (a removed file that was
// not known, or a directory gone or walked again), in one pass over each map: a checkout that
// removes a thousand files must not go through 10,000 paths a thousand times.
func (s *Source) forget(files map[string]digest, dirs []string) {
	if len(dirs) == 0 {
		return
	}
	set := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		set[d] = true
	}
	below := func(p string) bool { // p is one of dirs, or below one
		for {
			if set[p] {
				return true
			}
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				return false
			}
			p = p[:i]
		}
	}
	maps.DeleteFunc(files, func(p string, _ digest) bool { return below(p) })
	maps.DeleteFunc(s.cache, func(p string, _ cached) bool { return below(p) })
	maps.DeleteFunc(s.links, func(p string, _ bool) bool { return below(p) })
}

// dropBelow deletes the warnings of the paths below the directory rel (a few: one pass).
func dropBelow(warned map[string]bool, rel string) {
	maps.DeleteFunc(warned, func(p string, _ bool) bool { return strings.HasPrefix(p, rel+"/") })
}

// noteLinks records the symlinks among the listed files: every rescan hashes them again.
func (s *Source) noteLinks(list []listed) {
	for _, f := range list {
		if f.target != filepath.Join(s.real, filepath.FromSlash(f.rel)) {
			s.links[f.rel] = true
		}
	}
}

// follow resolves the symlink at p. It returns false, and logs a warning once per path and
// reason, for links that dangle, leave Root or point to a hidden path.
func (s *Source) follow(p, rel string, warned map[string]bool) (string, bool) {
	target, err := filepath.EvalSymlinks(p)
	var reason string
	switch {
	case err != nil:
		reason = "symlink cannot be resolved; skipped"
	case !within(s.real, target):
		reason = "symlink leaves the root; not followed"
	case hidden(relSlash(s.real, target)):
		reason = "symlink points to a hidden path; not followed"
	default:
		return target, true
	}
	warned[rel] = true
	if s.warned[rel] != reason {
		s.warned[rel] = reason
		s.log.Warn("local: "+reason, "path", rel, "target", target, "err", err)
	}
	return "", false
}

// hash returns the digest of the file at target (rel's own path or its symlink's target),
// from the cache when its size and mtime have not changed (else read through buf: read). It
// returns false for targets that are not regular files: symlinks to directories are not
// followed.
func (s *Source) hash(rel, target string, buf []byte) (dg digest, c cached, ok, read bool, err error) {
	fi, err := os.Stat(target)
	if err != nil {
		return digest{}, cached{}, false, false, err
	}
	if !fi.Mode().IsRegular() {
		if fi.IsDir() {
			s.log.Debug("local: symlink to a directory; not followed", "path", rel)
		}
		return digest{}, cached{}, false, false, nil
	}
	c, ok = s.cache[rel]
	if !ok || c.racy || c.target != target || c.size != fi.Size() || !c.mtime.Equal(fi.ModTime()) {
		if c, err = readSum(target, buf); err != nil {
			return digest{}, cached{}, false, false, err
		}
		read = true
	}
	return digest{sum: c.sum, exec: fi.Mode()&0o100 != 0}, c, true, read, nil
}

// readSum reads the file at path through buf and returns its sha256 with the stat data of the
// open file.
func readSum(path string, buf []byte) (cached, error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return cached{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return cached{}, err
	}
	h := sha256.New()
	// Hide File.WriteTo, which would allocate a buffer per file.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return cached{}, err
	}
	c := cached{target: path, size: fi.Size(), mtime: fi.ModTime()}
	h.Sum(c.sum[:0])
	c.racy = start.Sub(c.mtime) < racyWindow
	return c, nil
}

// treeID hashes the sorted (path, executable bit, content hash) of every file.
func treeID(files map[string]digest) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		d := files[p]
		mode := byte('-')
		if d.exec {
			mode = 'x'
		}
		io.WriteString(h, p)
		h.Write([]byte{0, mode})
		h.Write(d.sum[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:idBytes])
}

// changed returns the sorted paths that were added, removed or modified (content or
// executable bit) between prev and cur; empty, not nil, when none.
func changed(prev, cur map[string]digest) []string {
	out := []string{}
	for p, d := range cur {
		if old, ok := prev[p]; !ok || old != d {
			out = append(out, p)
		}
	}
	for p := range prev {
		if _, ok := cur[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
