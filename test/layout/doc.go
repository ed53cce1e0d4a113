// Package layout checks the house on the module's import graph (`go list`): the ground floor
// (internal/) imports only itself and third-party code, products never import the top floor
// (cmd/), nothing but a binary's main imports its app package, test rigs (test/) are imported
// by tests and hack/ only, go-nvml by the node labeler's NVML package only, and every package
// has a doc.go. docs/layout.md describes the same floors.
package layout
