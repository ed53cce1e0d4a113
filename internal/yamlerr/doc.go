// Package yamlerr splits the errors of go-yaml's decoder into a line and a message each, and
// holds the error type (Error: file, line, message) of the strict parsers whose errors name
// file:line (review's gpuctl-policy.yaml, notify's gpuctl-alerts.yaml).
package yamlerr
