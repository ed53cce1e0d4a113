package app

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/secrets/sops"
)

func newSecretCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Add encrypted Secrets to the repository",
		Long: `Secrets the GitOps way: a team's Secret is committed SOPS-encrypted for the team's age
recipients and the admin's (secrets: of .gpuctl.yaml), and the reconciler decrypts it with the
team's key when it applies it (docs/secrets.md).`,
		Args: writeArgs(0, "a subcommand (create)"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSecretCreateCommand(s))
	return cmd
}

// secretSources are the flags that give a Secret's keys and values.
type secretSources struct {
	literals []string
	files    []string
	envFiles []string
}

func newSecretCreateCommand(s Streams) *cobra.Command {
	var o writeOptions
	var src secretSources
	var team string
	cmd := &cobra.Command{
		Use:   "create NAME -n TEAM (--from-literal KEY=VALUE | --from-file [KEY=]PATH | --from-env-file PATH)...",
		Short: "Add an encrypted Secret to a team's directory, and commit it",
		Long: `Build a Kubernetes Secret (core/v1, stringData) from literals and files, as kubectl create
secret generic does, encrypt it with SOPS for the team's age recipients and the admin's
(secrets.teams.TEAM and secrets.admin of .gpuctl.yaml), and commit it as NAME.sops.yaml in the
team's directory, as gpuctl create commits a file. Only the values are encrypted: the Secret's
name, namespace and keys stay readable in Git and in reviews. The reconciler decrypts the file
with the team's key alone (docs/secrets.md); the sops tool decrypts it too.

No value is ever printed: --dry-run shows the encrypted file, and errors name keys, files and
lines, never what they hold. --from-env-file reads KEY=VALUE lines (blank lines and # comments
skipped, the value kept as written, quotes included, as kubectl does). A value that is not
UTF-8 text (a binary --from-file) goes to data, base64-encoded.

Exit code 0: committed (or, with --dry-run, the diff printed); 1: refused or failed, nothing
committed.`,
		Example: `  gpuctl secret create hf-token -n alice --from-literal HF_TOKEN=hf_… --push
  gpuctl secret create wandb -n alice --from-env-file wandb.env --dry-run
  gpuctl secret create s3 -n alice --from-file credentials=$HOME/.aws/credentials --branch add-s3`,
		Args: writeArgs(1, "the Secret's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return failed(fmt.Errorf("secret name %q: %s", name, errs[0]))
			}
			data, err := src.read()
			if err != nil {
				return failed(err)
			}
			defer clearValues(data)
			return runWrite(cmd.Context(), s, &o, func(repo *edit.Repo, me who) (*edit.Result, error) {
				t := team
				if t == "" {
					t = me.team
				}
				if t == "" {
					return nil, fmt.Errorf("no team: give -n TEAM (or list your user.email %q under teams: in %s)", me.email, keys.ConfigFile)
				}
				recipients, err := repo.Config.SecretRecipientsFor(t)
				if err != nil {
					return nil, err
				}
				plain, err := secretManifest(name, t, data)
				if err != nil {
					return nil, err
				}
				enc, err := sops.Encrypt(plain, recipients)
				clear(plain)
				if err != nil {
					return nil, fmt.Errorf("secret %s: encrypting: %w", name, err)
				}
				file := name + ".sops.yaml"
				res, err := repo.Create([]edit.File{{Name: file, Data: enc, Target: file}}, edit.CreateOptions{Team: t})
				var exists *edit.FileExistsError
				if errors.As(err, &exists) {
					return nil, fmt.Errorf("secret %s: %s exists: to change its values, sops edit it (with the team's or the admin's key), or create the Secret under a new name and refer to that", name, exists.Path)
				}
				if res != nil { // that this machine has no key to decrypt it is no news here
					res.Warnings = slices.DeleteFunc(res.Warnings, func(d *render.Diagnostic) bool {
						return d.File == file && strings.HasPrefix(d.Message, "encrypted with SOPS and not decrypted here")
					})
				}
				return res, err
			})
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return failed(err) })
	f := cmd.Flags()
	f.StringVarP(&team, "namespace", "n", "", "the team (namespace) whose directory receives the Secret (default: your team by the teams: of .gpuctl.yaml)")
	f.StringArrayVar(&src.literals, "from-literal", nil, "KEY=VALUE: a key and its value (repeatable)")
	f.StringArrayVar(&src.files, "from-file", nil, "[KEY=]PATH: a key (default: the file's base name) holding the file's content (repeatable)")
	f.StringArrayVar(&src.envFiles, "from-env-file", nil, "PATH: a file of KEY=VALUE lines, one key each (repeatable)")
	o.BindFlags(f)
	return cmd
}

// secretValue is one key of a Secret and its value.
type secretValue struct {
	key   string
	value []byte
	from  string // where it was given, for errors: "--from-literal", a file, file:line
}

// read collects the keys and values of the flags, in the order of the kinds of flags, each
// key once. Errors name keys, files and lines, never values.
func (src secretSources) read() ([]secretValue, error) {
	var out []secretValue
	seen := map[string]string{}
	add := func(v secretValue) error {
		if errs := validation.IsConfigMapKey(v.key); len(errs) > 0 {
			return fmt.Errorf("%s: key %q: %s", v.from, v.key, errs[0])
		}
		if first, dup := seen[v.key]; dup {
			return fmt.Errorf("%s: key %q is also given by %s", v.from, v.key, first)
		}
		seen[v.key] = v.from
		out = append(out, v)
		return nil
	}
	for _, l := range src.literals {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, errors.New("--from-literal: expected KEY=VALUE (the argument is not shown: it may hold a value)")
		}
		if err := add(secretValue{key: k, value: []byte(v), from: "--from-literal " + k}); err != nil {
			return nil, err
		}
	}
	for _, f := range src.files {
		k, p, ok := strings.Cut(f, "=")
		if !ok {
			k, p = filepath.Base(f), f
		}
		if k == "" || p == "" {
			return nil, fmt.Errorf("--from-file %q: expected [KEY=]PATH", f)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--from-file %s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		if err := add(secretValue{key: k, value: data, from: "--from-file " + p}); err != nil {
			return nil, err
		}
	}
	for _, p := range src.envFiles {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--from-env-file: %w", err)
		}
		vals, err := parseEnvFile(p, data)
		clear(data)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no keys: give --from-literal KEY=VALUE, --from-file [KEY=]PATH or --from-env-file PATH")
	}
	return out, nil
}

// parseEnvFile reads KEY=VALUE lines as kubectl's --from-env-file does: blank lines and lines
// starting with # skipped, leading white space of a line and the key's trailing white space
// dropped (a key may not hold white space), the value kept as written.
func parseEnvFile(name string, data []byte) ([]secretValue, error) {
	var out []secretValue
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimLeft(strings.TrimPrefix(sc.Text(), "\ufeff"), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := fmt.Sprintf("%s:%d", name, n)
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("%s: not UTF-8 text", at)
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimRight(k, " \t")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: expected KEY=VALUE (the line is not shown: it may hold a value)", at)
		}
		if strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("%s: a key may not hold white space", at)
		}
		out = append(out, secretValue{key: k, value: []byte(v), from: at})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// secretManifest is the Secret's YAML: UTF-8 values in stringData, the others base64 in data.
func secretManifest(name, namespace string, values []secretValue) ([]byte, error) {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	mapping := func(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }
	stringData, data := mapping(), mapping()
	for _, v := range values {
		if utf8.Valid(v.value) {
			stringData.Content = append(stringData.Content, str(v.key), str(string(v.value)))
		} else {
			data.Content = append(data.Content, str(v.key), str(base64.StdEncoding.EncodeToString(v.value)))
		}
	}
	doc := mapping(str("apiVersion"), str("v1"), str("kind"), str("Secret"),
		str("metadata"), mapping(str("name"), str(name), str("namespace"), str(namespace)),
		str("type"), str("Opaque"))
	if len(data.Content) > 0 {
		doc.Content = append(doc.Content, str("data"), data)
	}
	if len(stringData.Content) > 0 {
		doc.Content = append(doc.Content, str("stringData"), stringData)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if enc.Encode(doc) != nil || enc.Close() != nil { // never the encoder's text: it may quote a value
		return nil, fmt.Errorf("secret %s: cannot write the manifest", name)
	}
	return b.Bytes(), nil
}

// clearValues overwrites the values read, once they are encrypted.
func clearValues(values []secretValue) {
	for _, v := range values {
		clear(v.value)
	}
}
