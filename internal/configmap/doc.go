// Package configmap writes the daemon's bookkeeping ConfigMaps (status, drift report): data
// keys merged in, the ConfigMap created when missing.
package configmap
