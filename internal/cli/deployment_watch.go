package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	xterm "golang.org/x/term"

	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/cli/watchview"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// WatchOptions are what `slipway deployment watch` and `slipway deploy --watch` share: the
// --progress flag and the run that follows a deployment until it ends. *WatchOptions is the
// Factory's Watcher.
type WatchOptions struct {
	f        *Factory
	progress progressValue
}

// NewWatchOptions is the watch of f's streams and manager, --progress auto.
func NewWatchOptions(f *Factory) *WatchOptions {
	return &WatchOptions{f: f, progress: progressValue{mode: watchview.ModeAuto}}
}

// AddFlags adds --progress; a bad value is refused while the flags are parsed, before the
// command sends anything.
func (o *WatchOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var(&o.progress, "progress", "how to show progress: auto (tty on a terminal, else plain), tty (a table redrawn in place), plain (a timestamped line per change) or json (the events as NDJSON)")
}

// progressValue is --progress, checked when set.
type progressValue struct {
	mode watchview.Mode
	set  bool
}

func (p *progressValue) String() string { return string(p.mode) }
func (p *progressValue) Type() string   { return "mode" }
func (p *progressValue) Set(s string) error {
	m, err := watchview.ParseMode(strings.ToLower(s))
	if err != nil {
		return errors.New("must be auto, tty, plain or json")
	}
	p.mode, p.set = m, true
	return nil
}

// NewCmdDeploymentWatch is `slipway deployment watch ID`.
func NewCmdDeploymentWatch(f *Factory, runF func(ctx context.Context, o *WatchOptions, id string) error) *cobra.Command {
	opts := NewWatchOptions(f)
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a deployment live until it ends; the exit code tells how it ended",
		Long: `Follow a deployment until it ends: on a terminal, a table of its clusters grouped under a
progress bar per stage (each cluster's step, Helm revision, elapsed time and what it waits for),
redrawn in place; elsewhere, a timestamped line per change; with --progress json (or -o json),
the manager's events as NDJSON. A deployment that has already ended is printed at once.

The watch reads the manager's event stream and reconnects from the last event after a drop.
--timeout (default 5m) bounds it; Ctrl-C stops the watch, not the deployment.

Exit codes: 0 Completed; 1 Failed or RolledBack (or an error); 2 Cancelled, or the watch
stopped by Ctrl-C; 4 not signed in or not allowed; 8 still running when --timeout passed.`,
		Example: `  slipway deployment watch 0b7c6f0e-8d0a-4a8e-9a43-2f1f0c7f9a11

  # In CI: a line per change, and the exit code gates the pipeline
  slipway deployment watch ID --progress plain --timeout 30m

  # The raw events, one JSON object a line
  slipway deployment watch ID --progress json | jq -r .message`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeDeployments(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts, args[0])
			}
			return opts.Watch(cmd.Context(), args[0])
		},
	}
	opts.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("progress", enumCompletion(watchview.Modes...))
	return cmd
}

// Mode is the mode the watch runs in: --progress, else json with -o json, else tty when
// standard output is a terminal and plain otherwise.
func (o *WatchOptions) Mode() (watchview.Mode, error) {
	f := o.f
	switch {
	case f.OutputFormat() == output.FormatYAML:
		return "", flagErrorf("-o yaml does not go with watching: the watch prints a table, lines, or with -o json (--progress json) the events as NDJSON")
	case o.progress.set && o.progress.mode != watchview.ModeAuto:
		return o.progress.mode, nil
	case f.OutputFormat() == output.FormatJSON:
		return watchview.ModeJSON, nil
	case f.IOStreams.IsStdoutTTY():
		return watchview.ModeTTY, nil
	}
	return watchview.ModePlain, nil
}

// Watch follows deployment id until it ends (see NewCmdDeploymentWatch for the modes and exit
// codes): nil when it completed; an error for exit 1 when it failed or was rolled back;
// ErrCancelled when it was cancelled or the watch was stopped; a *PendingError when ctx's
// deadline (--timeout) passed first.
func (o *WatchOptions) Watch(ctx context.Context, id string) error {
	f := o.f
	mode, err := o.Mode()
	if err != nil {
		return err
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	ios := f.IOStreams
	d, err := watchview.Watch(ctx, c, id, watchview.Options{Mode: mode, Out: ios.Out, ErrOut: ios.ErrOut,
		Now: f.Now, Width: ios.TerminalWidth, Height: terminalHeight(ios)})
	return o.outcome(ctx, id, d, err)
}

// outcome is the error (and so the exit code) for how the watch ended.
func (o *WatchOptions) outcome(ctx context.Context, id string, d *api.Deployment, err error) error {
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		status := "running"
		if d != nil {
			status = d.Status
		}
		return Pending("deployment %s is still %s after --timeout %s; follow it again with: slipway deployment watch %s",
			id, status, o.f.Global.Timeout, id)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return ErrCancelled
	default:
		return err
	}
	switch d.Status {
	case "Completed":
		return nil
	case "Cancelled":
		fmt.Fprintf(o.f.IOStreams.ErrOut, "deployment %s was cancelled: %s\n", d.ID, orDash(d.Reason))
		return ErrCancelled
	}
	return &DeploymentEndedError{ID: d.ID, Status: d.Status, Reason: d.Reason}
}

// DeploymentEndedError is a watched deployment that ended Failed or RolledBack (exit 1).
type DeploymentEndedError struct{ ID, Status, Reason string }

func (e *DeploymentEndedError) Error() string {
	return fmt.Sprintf("deployment %s ended %s: %s", e.ID, e.Status, orDash(e.Reason))
}

// terminalHeight reads the height of the terminal standard output is (0 when it is none).
func terminalHeight(ios *iostreams.IOStreams) func() int {
	file, ok := ios.Out.(*os.File)
	if !ok || !ios.IsStdoutTTY() {
		return func() int { return 0 }
	}
	return func() int {
		if _, h, err := xterm.GetSize(int(file.Fd())); err == nil {
			return h
		}
		return 0
	}
}
