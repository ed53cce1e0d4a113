// Package logging builds the slog loggers of gpuctl's daemons from their --log-format and
// --log-level flags: tint for people (coloured on a terminal), JSON for machines.
package logging
