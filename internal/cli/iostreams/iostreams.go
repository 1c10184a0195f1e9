// Package iostreams is the CLI's standard streams with what commands ask of them: whether each
// is a terminal, whether to use colour (NO_COLOR, CLICOLOR, CLICOLOR_FORCE), the terminal's
// width, and a yes/no question on a terminal. System() reads the process's streams; Test()
// gives buffers whose terminal-ness a test sets.
package iostreams

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// DefaultWidth is the width assumed when the terminal's cannot be read.
const DefaultWidth = 80

// IOStreams are the standard streams. Data goes to Out, messages and progress to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	color                          bool
	width                          int
	// widthFn reads the terminal's width now (nil: width is fixed).
	widthFn func() (int, bool)
	// reader buffers In for Confirm, so that answers read by one question are not lost.
	reader *bufio.Reader
}

// System returns the process's streams, with terminal-ness read from their file descriptors and
// colour decided by the environment (see ColorFromEnv).
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY: isTerminal(os.Stdin), stdoutTTY: isTerminal(os.Stdout), stderrTTY: isTerminal(os.Stderr)}
	s.color = ColorFromEnv(os.Getenv, s.stdoutTTY)
	s.widthFn = func() (int, bool) {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
			return w, true
		}
		if w, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && w > 0 {
			return w, true
		}
		return 0, false
	}
	return s
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Test returns streams over buffers (standard input empty), none of them a terminal, colour off,
// width DefaultWidth. Set*TTY turns terminal behaviour on.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, width: DefaultWidth}, in, out, errOut
}

// ColorFromEnv decides colour as go-gh does: NO_COLOR set (to anything) turns it off,
// CLICOLOR_FORCE (not "0") turns it on even when piped, CLICOLOR=0 turns it off; otherwise
// colour is on exactly when standard output is a terminal.
func ColorFromEnv(getenv func(string) string, stdoutTTY bool) bool {
	switch {
	case getenv("NO_COLOR") != "":
		return false
	case getenv("CLICOLOR_FORCE") != "" && getenv("CLICOLOR_FORCE") != "0":
		return true
	case getenv("CLICOLOR") == "0":
		return false
	}
	return stdoutTTY
}

func (s *IOStreams) IsStdinTTY() bool  { return s.stdinTTY }
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

func (s *IOStreams) SetStdinTTY(v bool)  { s.stdinTTY = v }
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }

// ColorEnabled reports whether output may carry ANSI colour.
func (s *IOStreams) ColorEnabled() bool     { return s.color }
func (s *IOStreams) SetColorEnabled(v bool) { s.color = v }

// CanPrompt reports whether a question can be asked: standard input and output are terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stdoutTTY }

// ProgressAllowed reports whether a spinner or redrawn view may be drawn on standard error:
// both standard output and standard error are terminals (gh's rule).
func (s *IOStreams) ProgressAllowed() bool { return s.stdoutTTY && s.stderrTTY }

// TerminalWidth is the terminal's width now, or DefaultWidth (or the width a test set).
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if s.widthFn != nil {
		if w, ok := s.widthFn(); ok {
			return w
		}
	}
	return DefaultWidth
}

// SetWidth fixes the width (tests, or a --width flag).
func (s *IOStreams) SetWidth(w int) { s.width = w }

// ErrNoAnswer is Confirm's error when standard input ended before an answer.
var ErrNoAnswer = errors.New("no answer: standard input ended")

// Confirm asks a yes/no question on standard error and reads the answer from standard input:
// "y" or "yes" (any case) is yes, anything else no. Callers ask only when CanPrompt.
func (s *IOStreams) Confirm(question string) (bool, error) {
	if s.reader == nil {
		s.reader = bufio.NewReader(s.In)
	}
	fmt.Fprintf(s.ErrOut, "%s [y/N]: ", question)
	line, err := s.reader.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		if errors.Is(err, io.EOF) {
			return false, ErrNoAnswer
		}
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// ReadLine reads one line of standard input (without its line ending), for a prompted value.
func (s *IOStreams) ReadLine(prompt string) (string, error) {
	if s.reader == nil {
		s.reader = bufio.NewReader(s.In)
	}
	fmt.Fprint(s.ErrOut, prompt)
	line, err := s.reader.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		if errors.Is(err, io.EOF) {
			return "", ErrNoAnswer
		}
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
