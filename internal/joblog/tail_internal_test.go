package joblog

import (
	"fmt"
	"strings"
	"testing"
)

func TestTailBuffer_KeepsTheEnd(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		max    int
		want   string
	}{
		{name: "empty", stream: "", max: 100, want: ""},
		{name: "shorter", stream: "a\nb\n", max: 100, want: "a\nb\n"},
		{name: "exactly max", stream: "0123456789", max: 10, want: "0123456789"},
		// The note takes 32 bytes of 50: the last 18 are "e-7\nline-8\nline-9\n", from mid-line.
		{name: "cut at a line start", stream: lines(10, "\n"), max: 50, want: CutNote + "line-8\nline-9\n"},
		// The last 18 bytes start right after a newline: nothing more is dropped.
		{name: "window on a line start", stream: strings.Repeat("-", 40) + "\nabcdefghijklmnopq\n", max: 50, want: CutNote + "abcdefghijklmnopq\n"},
		{name: "unterminated last line", stream: lines(10, ""), max: 50, want: CutNote + "line-8\nline-9"},
		{name: "last line longer than the budget", stream: "ok\n" + strings.Repeat("x", 60) + "ERROR\n", max: 50, want: CutNote + strings.Repeat("x", 12) + "ERROR\n"},
		{name: "last line longer, unterminated", stream: "ok\n" + strings.Repeat("x", 60) + "ERROR", max: 50, want: CutNote + strings.Repeat("x", 13) + "ERROR"},
		// 17 bytes of two-byte characters start inside one: from the next character on.
		{name: "utf-8 boundary", stream: "ok\n" + strings.Repeat("é", 30) + "\n", max: 50, want: CutNote + strings.Repeat("é", 8) + "\n"},
		{name: "max below the note", stream: "0123456789abcdef\n", max: 5, want: "cdef\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Whatever the sizes of the writes.
			for _, chunk := range []int{1, 3, 7, 64, 1 << 20} {
				b := newTailBuffer(tt.max)
				for s := tt.stream; s != ""; {
					n := min(chunk, len(s))
					if _, err := b.Write([]byte(s[:n])); err != nil {
						t.Fatal(err)
					}
					s = s[n:]
				}
				if got := b.String(); got != tt.want {
					t.Errorf("writes of %d: String() = %q, want %q", chunk, got, tt.want)
				}
				if len(b.String()) > tt.max {
					t.Errorf("writes of %d: %d bytes, more than max %d", chunk, len(b.String()), tt.max)
				}
			}
		})
	}
}

// lines is "line-0\nline-1\n...line-<n-1>" and then end.
func lines(n int, end string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "line-%d", i)
	}
	return b.String() + end
}

// TestTailBuffer_MemoryIsBounded: a stream many times max is kept in a buffer of at most
// 2×(max+1) bytes, whatever the sizes of the writes.
func TestTailBuffer_MemoryIsBounded(t *testing.T) {
	const max = 64 << 10
	line := []byte(strings.Repeat("progress ", 11) + "\n") // 100 bytes
	for _, chunk := range []int{1, 100, 4096, 32 << 10, 100 << 10} {
		b := newTailBuffer(max)
		var stream []byte
		for len(stream) < 10<<20 {
			stream = append(stream, line...)
		}
		stream = append(stream, "Error: UPGRADE FAILED\n"...)
		for s := stream; len(s) > 0; {
			n := min(chunk, len(s))
			_, _ = b.Write(s[:n])
			s = s[n:]
			if cap(b.buf) > 2*(max+1) {
				t.Fatalf("writes of %d: buffer capacity %d, above 2×(max+1) = %d", chunk, cap(b.buf), 2*(max+1))
			}
		}
		got := b.String()
		if !strings.HasSuffix(got, "\nError: UPGRADE FAILED\n") || !strings.HasPrefix(got, CutNote+"progress ") {
			t.Errorf("writes of %d: String() = %q...%q", chunk, got[:80], got[len(got)-80:])
		}
	}
}
