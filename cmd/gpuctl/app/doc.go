// Package app implements the gpuctl command line: one file per command, each built by a
// new<Name>Command function over the shared Streams. Commands return errors; the only
// os.Exit is in cmd/gpuctl, which maps an *ExitError to its code.
//
//	cmd := app.NewRootCommand(app.Streams{Out: os.Stdout, Err: os.Stderr})
//	err := cmd.ExecuteContext(ctx)
package app
