// Package app implements the gpuctl command line: one file per command, each built by a
// new<Name>Command function over the shared Streams. Commands return errors; Run prints an
// error as "error: <message>" and maps it to the exit code (Code: an *ExitError keeps its
// own); the only os.Exit is in cmd/gpuctl, which calls Run with the process's arguments.
//
//	code := app.Run(ctx, app.Streams{Out: os.Stdout, Err: os.Stderr}, os.Args[1:])
package app
