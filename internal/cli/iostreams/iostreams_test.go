package iostreams

import (
	"testing"
)

func TestColorFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		tty  bool
		want bool
	}{
		{nil, true, true},
		{nil, false, false},
		{map[string]string{"NO_COLOR": "1"}, true, false},
		{map[string]string{"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, true, false},
		{map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{map[string]string{"CLICOLOR": "0"}, true, false},
	} {
		got := ColorFromEnv(func(k string) string { return tc.env[k] }, tc.tty)
		if got != tc.want {
			t.Errorf("ColorFromEnv(%v, tty %v) = %v, want %v", tc.env, tc.tty, got, tc.want)
		}
	}
}

func TestConfirm(t *testing.T) {
	for input, want := range map[string]bool{"y\n": true, "YES\n": true, "n\n": false, "\n": false, "yes": true} {
		ios, in, _, errOut := Test()
		in.WriteString(input)
		got, err := ios.Confirm("Cancel deployment d1?")
		if err != nil {
			t.Fatalf("%q: %v", input, err)
		}
		if got != want {
			t.Errorf("Confirm with %q = %v, want %v", input, got, want)
		}
		if errOut.String() != "Cancel deployment d1? [y/N]: " {
			t.Errorf("question %q", errOut)
		}
	}
	ios, _, _, _ := Test()
	if _, err := ios.Confirm("?"); err != ErrNoAnswer {
		t.Errorf("Confirm on empty input = %v, want ErrNoAnswer", err)
	}
}

func TestTestStreams(t *testing.T) {
	ios, _, _, _ := Test()
	if ios.IsStdoutTTY() || ios.CanPrompt() || ios.ColorEnabled() || ios.TerminalWidth() != DefaultWidth {
		t.Errorf("Test() streams are plain: %+v", ios)
	}
	ios.SetStdinTTY(true)
	ios.SetStdoutTTY(true)
	if !ios.CanPrompt() {
		t.Error("stdin and stdout terminals can prompt")
	}
}
