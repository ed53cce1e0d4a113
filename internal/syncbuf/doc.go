// Package syncbuf is a bytes.Buffer that goroutines may write and read at once: a test reads
// what a command, a process or a logger is still writing.
package syncbuf
