package watchview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// TestPlain: the first call describes the deployment and every cluster; then a line comes only
// for what changed, a hold's countdown is no change, and the end has a last line.
func TestPlain(t *testing.T) {
	p := NewPlain()
	st := evaluating()
	st.Now = at(60)
	golden(t, "plain/first.golden", p.Lines(st))

	st.Now = at(62)
	st.Deployment.Waiting.Message = "evaluation period, 8 s left"
	st.Deployment.Clusters[1].Waiting = st.Deployment.Waiting.Message
	st.Deployment.Clusters[2].Waiting = "waiting for stage 2 (evaluation period, 8 s left)"
	st.Deployment.Clusters[3].Waiting = st.Deployment.Clusters[2].Waiting
	if got := p.Lines(st); len(got) != 0 {
		t.Errorf("a countdown printed lines:\n%s", strings.Join(got, "\n"))
	}

	// The hold ends: dev-2 healthy, the last stage installs.
	st.Now = at(71)
	d := st.Deployment
	d.Stage, d.Waiting = 2, nil
	d.Clusters[1].Status, d.Clusters[1].Waiting = "healthy", ""
	d.Clusters[2].Status, d.Clusters[2].Waiting, d.Clusters[2].InstallAttempts = "installing", "", 1
	d.Clusters[3].Status, d.Clusters[3].Waiting, d.Clusters[3].InstallAttempts = "installing", "", 1
	golden(t, "plain/stage.golden", p.Lines(st))

	// Unchanged: nothing. A retried install is a change.
	if got := p.Lines(st); len(got) != 0 {
		t.Errorf("no change printed lines:\n%s", strings.Join(got, "\n"))
	}
	st.Now = at(75)
	d.Clusters[3].InstallAttempts = 2
	golden(t, "plain/retry.golden", p.Lines(st))

	st.Now = at(130)
	st.Deployment = completed().Deployment
	golden(t, "plain/end.golden", p.Lines(st))
	if got := p.Lines(st); len(got) != 0 {
		t.Errorf("after the end: %q", got)
	}
}

// TestPlainApprovals: an approval's message is a change when a decision is given.
func TestPlainApprovals(t *testing.T) {
	p := NewPlain()
	st := approval()
	st.Deployment.Waiting = &api.Waiting{Reason: api.WaitApproval, Message: "approval by 2 Admins (0 of 2 given)"}
	if got := p.Lines(st); len(got) != 5 {
		t.Fatalf("first lines: %q", got)
	}
	st.Deployment.Waiting.Message = "approval by 2 Admins (1 of 2 given)"
	got := p.Lines(st)
	if len(got) != 1 || !strings.HasSuffix(got[0], "WaitingApproval, stage 1 of 3 — waiting: approval by 2 Admins (1 of 2 given)") {
		t.Errorf("a decision given: %q", got)
	}
}

// TestScreen: the first frame hides the cursor; the next moves up over the last one and
// overwrites it, erasing line ends and, when shorter, what is below; an unchanged frame writes
// nothing; close shows the cursor.
func TestScreen(t *testing.T) {
	var b bytes.Buffer
	s := &screen{w: &b}
	s.draw([]string{"one", "two", "three"})
	s.draw([]string{"one", "two", "three"})
	s.draw([]string{"uno", "dos"})
	s.close()
	want := "\x1b[?25l" + "one\x1b[K\ntwo\x1b[K\nthree\x1b[K\n" +
		"\r\x1b[3A" + "uno\x1b[K\ndos\x1b[K\n\x1b[J" +
		"\x1b[?25h"
	if b.String() != want {
		t.Errorf("written:\n got %q\nwant %q", b.String(), want)
	}
	var quiet bytes.Buffer
	(&screen{w: &quiet}).close()
	if quiet.Len() != 0 {
		t.Errorf("closing a screen that drew nothing wrote %q", quiet.String())
	}
}
