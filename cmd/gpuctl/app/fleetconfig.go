package app

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuctl/gpuctl/internal/yamlerr"
	"github.com/gpuctl/gpuctl/usage"
)

// fleetCluster is one cluster of the config file's clusters: list, which --clusters and
// --all-clusters read (fleet.go). It is read through a kubeconfig context (Context, and
// Kubeconfig when not the default one) or through its daemon's API (Server with Token or
// TokenFile), never both.
//
//	clusters:
//	  - name: onprem-a100
//	    context: onprem
//	  - name: cloud-h100
//	    server: https://gpuctl.cloud.example
//	    tokenFile: ~/.config/gpuctl/cloud-token
type fleetCluster struct {
	Name       string `yaml:"name"`
	Context    string `yaml:"context"`
	Kubeconfig string `yaml:"kubeconfig"`
	// Namespace is gpuctl-reconciler's namespace in the cluster, read through the kubeconfig
	// (default gpuctl-system).
	Namespace string `yaml:"namespace"`
	Server    string `yaml:"server"`
	Token     string `yaml:"token"`
	TokenFile string `yaml:"tokenFile"`
}

// clusterName is the form of a cluster's name: a DNS label, as a context's usually is.
var clusterName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// configTypes are the words for go-yaml's types in the config file's errors.
var configTypes = map[string]string{"app.clientConfig": "the config file", "app.fleetCluster": "a cluster"}

// checkClusters checks the clusters of the config file read from path (root is its parsed
// document, for lines): each error is a *yamlerr.Error with the file and line. A token in
// clear (token:) is allowed, as the top-level token is; tokenFile paths are made absolute
// (~/ is the home directory, a relative path is relative to the config file's directory).
func (c *clientConfig) checkClusters(path string, root *yaml.Node) []error {
	items := clusterNodes(root)
	var errs []error
	seen := map[string]bool{}
	for i := range c.Clusters {
		fc := &c.Clusters[i]
		line := func(key string) int {
			if i >= len(items) {
				return 0
			}
			for j := 0; j+1 < len(items[i].Content); j += 2 {
				if items[i].Content[j].Value == key {
					return items[i].Content[j].Line
				}
			}
			return items[i].Line
		}
		at := fmt.Sprintf("clusters[%d]", i)
		bad := func(key, format string, args ...any) {
			errs = append(errs, &yamlerr.Error{File: path, Line: line(key), Message: at + fmt.Sprintf(format, args...)})
		}
		switch {
		case !clusterName.MatchString(fc.Name):
			bad("name", ".name: %q is not a name (lower-case letters, digits and dashes)", fc.Name)
		case seen[fc.Name]:
			bad("name", ".name: %q is a second cluster of that name", fc.Name)
		}
		seen[fc.Name] = true
		kubeSide := fc.Context != "" || fc.Kubeconfig != "" || fc.Namespace != ""
		switch {
		case fc.Server == "" && !kubeSide:
			bad("", ": context (a kubeconfig context) or server (gpuctl-reconciler's API) required")
		case fc.Server != "" && kubeSide:
			bad("server", ": server or context/kubeconfig/namespace, not both")
		case fc.Server != "":
			if u, err := url.Parse(fc.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("server", ".server: %q is not an http:// or https:// URL", usage.RedactURL(fc.Server))
			}
			switch {
			case fc.Token == "" && fc.TokenFile == "":
				bad("server", ": token or tokenFile required with server")
			case fc.Token != "" && fc.TokenFile != "":
				bad("tokenFile", ": token or tokenFile, not both")
			}
		}
		if kubeSide && (fc.Token != "" || fc.TokenFile != "") {
			bad("token", ": token and tokenFile go with server only (a context's credentials are the kubeconfig's)")
		}
		fc.TokenFile = configRelative(path, fc.TokenFile)
		fc.Kubeconfig = configRelative(path, fc.Kubeconfig)
	}
	return errs
}

// clusterNodes are the items of the clusters: list of the config file's document.
func clusterNodes(root *yaml.Node) []*yaml.Node {
	if root == nil || len(root.Content) == 0 {
		return nil
	}
	doc := root.Content[0]
	for j := 0; j+1 < len(doc.Content); j += 2 {
		if doc.Content[j].Value == "clusters" {
			return doc.Content[j+1].Content
		}
	}
	return nil
}

// configRelative is a path of the config file made absolute: ~/ is the home directory, a
// relative path is relative to the config file's directory; "" stays "".
func configRelative(config, p string) string {
	if p == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(config), p)
}

// token is the cluster's token: token, else the content of tokenFile (trimmed). Its errors
// name the file, never its content.
func (fc fleetCluster) token() (string, error) {
	if fc.TokenFile == "" {
		return fc.Token, nil
	}
	b, err := os.ReadFile(fc.TokenFile)
	if err != nil {
		return "", fmt.Errorf("tokenFile: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("tokenFile %s is empty", fc.TokenFile)
	}
	return t, nil
}
