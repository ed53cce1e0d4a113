package render

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/secrets/sops"
)

// Decryptor decrypts the SOPS-encrypted files of a render (secrets/sops, age keys): a file of a
// directory that .gpuctl.yaml maps to a namespace (a team's) with that namespace's keyring
// only, any other file with the admin's. So a file copied from bob's directory into alice's
// does not decrypt there. It remembers, in memory only, the plaintext of the files it
// decrypted, by their digest and namespace, for the renders that follow: a render of a
// revision in which an encrypted file did not change decrypts nothing (Decrypted counts what
// was). Plaintext is never put into the render cache (Cache), whose entries an encrypted file
// never has. Safe for concurrent use.
type Decryptor struct {
	admin *sops.Keyring
	teams map[string]*sops.Keyring

	mu        sync.Mutex
	memo      map[decryptKey]*decrypted
	renders   uint64 // renders begun, for forgetting what the last ones did not read
	decrypted atomic.Int64
}

// decryptKey identifies an encrypted file's content as decrypted for one namespace ("" for
// the admin's files).
type decryptKey struct {
	sum       [sha256.Size]byte
	namespace string
}

// decrypted is a file's plaintext and the render that last used it.
type decrypted struct {
	plain []byte
	used  uint64
}

// NewDecryptor returns a Decryptor with the admin's keyring (nil: the admin's files do not
// decrypt) and the teams' by namespace.
func NewDecryptor(admin *sops.Keyring, teams map[string]*sops.Keyring) *Decryptor {
	return &Decryptor{admin: admin, teams: teams, memo: map[decryptKey]*decrypted{}}
}

// Decrypted counts the files that the Decryptor decrypted (not those it remembered).
func (d *Decryptor) Decrypted() int64 { return d.decrypted.Load() }

// beginRender starts a render: the plaintext that neither it nor the render before it reads
// is forgotten when it ends (endRender).
func (d *Decryptor) beginRender() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.renders++
	return d.renders
}

// endRender forgets the plaintext of the files that the renders since before render did not
// read (removed or changed files, their old content). It drops the entries without wiping
// them: an older render that runs at once may still be parsing that plaintext.
func (d *Decryptor) endRender(render uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, v := range d.memo {
		if v.used+1 < render {
			delete(d.memo, k)
		}
	}
}

// decrypt decrypts data, whose digest is sum, for namespace ("" for an admin file).
func (d *Decryptor) decrypt(namespace string, sum [sha256.Size]byte, data []byte, render uint64) ([]byte, error) {
	k := decryptKey{sum: sum, namespace: namespace}
	d.mu.Lock()
	if m := d.memo[k]; m != nil {
		m.used = max(m.used, render)
		d.mu.Unlock()
		return m.plain, nil
	}
	d.mu.Unlock()
	ring, whose := d.admin, "the admin's key"
	if namespace != "" {
		ring, whose = d.teams[namespace], "namespace "+namespace+"'s"
	}
	if ring == nil {
		return nil, fmt.Errorf("encrypted with SOPS, and this reconciler holds no key of %s", whoseKeys(namespace))
	}
	plain, err := ring.Decrypt(data)
	if err != nil {
		var nk *sops.NoKeyError
		if errors.As(err, &nk) {
			return nil, fmt.Errorf("encrypted with SOPS for other keys than %s: %v", whose, err)
		}
		return nil, fmt.Errorf("encrypted with SOPS: %v", err)
	}
	d.decrypted.Add(1)
	d.mu.Lock()
	d.memo[k] = &decrypted{plain: plain, used: render}
	d.mu.Unlock()
	return plain, nil
}

// whoseKeys names the keys that decrypt a file of namespace ("" for the admin's).
func whoseKeys(namespace string) string {
	if namespace == "" {
		return "the admin (its files are not in a team's directory)"
	}
	return "namespace " + namespace + " (a team's files decrypt with the team's key alone)"
}

// decryptSource parses the encrypted file s (data, digest sum): decrypted with the
// Decryptor's key for its directory's namespace, or, without a Decryptor (a laptop, a pull
// request's CI), as what it declares without its values (sealed), the object annotated
// keys.Encrypted so that the engine leaves it as it is in the cluster.
func (st *run) decryptSource(s *source, sum [sha256.Size]byte, data []byte, ds *diagnostics) []*Document {
	namespace := ""
	if ns, mapped := st.namespaceFor(path.Dir(s.rel)); mapped {
		namespace = ns
	}
	if st.decryptor == nil {
		sealed, err := sealedManifest(data)
		if err != nil {
			ds.errorf(s.display, Pos{}, "", "encrypted with SOPS, and not readable: %v", err)
			return nil
		}
		docs := parseFile(s.display, sealed, ds)
		s.sealed = true
		for _, doc := range docs {
			if doc.Manifest != nil {
				u := &unstructured.Unstructured{Object: doc.Manifest}
				object.SetAnnotation(u, keys.Encrypted, keys.EncryptedSealed)
			}
		}
		ds.warnf(s.display, Pos{}, "", "encrypted with SOPS and not decrypted here (no key of %s): its values are not compared, and it is left as it is in the cluster", whoseKeys(namespace))
		return docs
	}
	plain, err := st.decryptor.decrypt(namespace, sum, data, st.decryptRender)
	if err != nil {
		ds.errorf(s.display, sopsLine(data), "sops", "%v", err)
		return nil
	}
	return parseFile(s.display, plain, ds)
}

// sopsLine is where an encrypted file's SOPS metadata (its top-level sops: key, which names
// the recipients) begins: what an error about its keys points at.
func sopsLine(data []byte) Pos {
	line := 1
	for i := 0; i < len(data); i++ {
		if (i == 0 || data[i-1] == '\n') && bytes.HasPrefix(data[i:], []byte("sops:")) {
			return Pos{Line: line, Column: 1}
		}
		if data[i] == '\n' {
			line++
		}
	}
	return Pos{}
}

// sealedManifest is an encrypted file without its SOPS metadata and with the values of its
// encrypted fields (SOPS' ENC[…] strings) emptied: what a reader without the key may know of
// it (its kind, name, labels and the names of its keys).
func sealedManifest(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, errors.New("not YAML") // the parser's message may quote the file
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping")
	}
	m := doc.Content[0]
	var kept []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "sops" {
			continue
		}
		kept = append(kept, m.Content[i], m.Content[i+1])
	}
	m.Content = kept
	var empty func(n *yaml.Node)
	empty = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.ScalarNode:
			if len(n.Value) > 4 && n.Value[:4] == "ENC[" {
				n.Value, n.Tag, n.Style = "", "!!str", 0
			}
		case yaml.MappingNode, yaml.SequenceNode:
			for _, c := range n.Content {
				empty(c)
			}
		}
	}
	empty(m)
	return yaml.Marshal(m)
}
