// Package docs keeps README.md and docs/*.md true to the code. Its tests (no code besides them)
// check that
//
//   - every flag that the docs give a gpuctl or gpuctl-reconciler command (`gpuctl get jobs
//     --foo`, a line `$ gpuctl-reconciler --foo` of a code block, and in docs/cli.md and
//     docs/daemon.md any `--foo` in backticks) is a flag of some command of those binaries;
//   - every route of the daemon's API that the docs name (`GET /api/v1/...`) is in the route
//     table, as the OpenAPI document that the daemon serves lists it;
//   - every field of docs/format.md's tables of fields (first column "field") is one whose name
//     the format's parser spells (a string of package render; there is no schema to check
//     against, so this finds a field renamed or misspelled, not one in the wrong place);
//   - the fenced ```console blocks run as shown.
//
// # Console blocks
//
// A ```console block holds commands, each on a line that starts with "$ ", followed by the
// output the command prints (standard output and standard error, in the order printed). The
// test runs each command with the gpuctl of this tree, in-process (cmd/gpuctl/app.Run) from
// the repository's root, and compares its output with the block's lines:
//
//   - a line that is exactly "..." stands for any number of lines, none included;
//   - "..." within a line stands for any text on that line (a duration, an age, a revision);
//   - a "# comment" after a command is the reader's, not the shell's: it is dropped;
//   - blank lines at the end of an output are not compared.
//
// The info string says how the block runs:
//
//   - ```console: offline, with no cluster and no kubeconfig (validate, render, version, ...).
//     Every command must be gpuctl's.
//   - ```console cluster: against a fresh local cluster (test/testcluster, the demo's nodes), started
//     for the block; the block's commands run in order on it.
//   - ```console no-run: not run (a cluster in some state, a Git remote, a daemon, a shell
//     pipeline). Use it sparingly: what is not run can drift.
//
// The tests feed deliberately broken documents to the same checks (a flag that no command has,
// a route the table lacks, a console block whose output differs) and expect each to be found.
package docs
