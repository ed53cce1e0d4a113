// Package app implements the gpuctl command line: one file per command, each built by a
// new<Name>Command function over the shared Streams. Commands return errors; Run prints an
// error as "error: <message>" and maps it to the exit code (Code: an *ExitError keeps its
// own); the only os.Exit is in cmd/gpuctl, which calls RunProgram with the process's argv:
// Run with the CLI named after argv[0], so that the help of the binary installed as the
// kubectl plugin kubectl-gpuctl says `kubectl gpuctl` (DisplayName).
//
//	code := app.RunProgram(ctx, app.Streams{Out: os.Stdout, Err: os.Stderr}, os.Args)
package app
