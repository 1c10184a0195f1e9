package words

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 clusters"}, {1, "1 cluster"}, {2, "2 clusters"}, {-1, "-1 clusters"}} {
		if got := Count(tc.n, "cluster"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
