package deploy

import (
	"bytes"
	"io"
	"testing"
)

// TestCappedBuffer_BoundsWhatIOCopyWrites: the renderer's stdout is copied with io.Copy, which
// uses a destination's ReadFrom when it has one and would then bypass the bound.
func TestCappedBuffer_BoundsWhatIOCopyWrites(t *testing.T) {
	b := &cappedBuffer{max: 10}
	if _, err := io.Copy(b, io.MultiReader(bytes.NewReader([]byte("0123456")), bytes.NewReader([]byte("789abcdef")))); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "0123456789" || !b.dropped {
		t.Errorf("kept %q, dropped %v; want the first 10 bytes and dropped", got, b.dropped)
	}
}
