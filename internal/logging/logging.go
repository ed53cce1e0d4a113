package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Options are the log flags.
type Options struct {
	Format string
	Level  string
}

// BindFlags adds --log-format and --log-level.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Format, "log-format", "text", "text (coloured on a terminal) or json")
	fs.StringVar(&o.Level, "log-level", "info", "debug, info, warn or error")
}

// Logger builds a logger that writes to w.
func (o *Options) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", o.Level, err)
	}
	switch strings.ToLower(o.Format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), nil
	case "text":
		f, ok := w.(*os.File)
		color := ok && term.IsTerminal(int(f.Fd()))
		return slog.New(tint.NewHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: !color})), nil
	}
	return nil, fmt.Errorf("--log-format %q: expected text or json", o.Format)
}
