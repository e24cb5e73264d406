package skills

import "testing"

func TestAtEOF(t *testing.T) {
	for _, c := range []struct {
		got, want   int
		total, size int64
		eof         bool
	}{
		{10, 11, 10, 10, true},     // the whole file, short: its end
		{0, 11, 0, 0, true},        // an empty file
		{11, 11, 11, 10, false},    // it grew: the buffer filled
		{5, 11, 5, 10, false},      // short, but before the size fstat gave
		{64, 64, 64, 64, false},    // a full buffer says nothing
		{3, 11, 13, 10, false},     // past the size: grew, read on
		{100, 256, 356, 356, true}, // the last of several reads
	} {
		if got := atEOF(c.got, c.want, c.total, c.size); got != c.eof {
			t.Errorf("atEOF(%d, %d, %d, %d) = %v, want %v", c.got, c.want, c.total, c.size, got, c.eof)
		}
	}
}
