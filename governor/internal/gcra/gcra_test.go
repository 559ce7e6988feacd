package gcra

import "testing"

func TestReserve(t *testing.T) {
	l := Limit{Rate: 10, Period: 1000, Burst: 3} // one cell every 100
	tat := int64(0)
	now := int64(5000)
	for i := 0; i < 3; i++ {
		d := Reserve(l, tat, now, 1)
		if !d.Allowed || d.Remaining != int64(2-i) {
			t.Fatalf("burst cell %d: %+v", i, d)
		}
		tat = d.TAT
	}
	d := Reserve(l, tat, now, 1)
	if d.Allowed || d.RetryAfter != 100 {
		t.Fatalf("over burst: %+v, want retry after 100", d)
	}
	if d := Reserve(l, tat, now+100, 1); !d.Allowed {
		t.Fatalf("after the emission interval: %+v", d)
	}
	if d := Reserve(l, 0, now, 4); d.Allowed || d.RetryAfter != -1 {
		t.Fatalf("cost above burst: %+v", d)
	}
	if d := Reserve(Limit{}, 0, now, 1000); !d.Allowed || d.Remaining != -1 {
		t.Fatalf("no limit: %+v", d)
	}
}

func TestAdjust(t *testing.T) {
	l := Limit{Rate: 1000, Period: 1000} // one per unit, burst 1000
	d := Reserve(l, 0, 0, 600)
	if !d.Allowed {
		t.Fatal(d)
	}
	if d2 := Reserve(l, d.TAT, 0, 600); d2.Allowed {
		t.Fatalf("1200 of 1000 allowed: %+v", d2)
	}
	tat := Adjust(l, d.TAT, 0, -300) // only 300 were used
	if d3 := Reserve(l, tat, 0, 600); !d3.Allowed {
		t.Fatalf("after a refund of 300: %+v", d3)
	}
	if got := Adjust(l, 10, 50, -100); got != 50 {
		t.Fatalf("refund below now = %d, want now (50)", got)
	}
}

// TestWindowBound: at any rate of attempts, no window of one period
// admits more than rate + burst.
func TestWindowBound(t *testing.T) {
	l := Limit{Rate: 50, Period: 60_000, Burst: 5}
	var tat int64
	var admitted []int64
	for now := int64(0); now < 3_600_000; now += 97 {
		if d := Reserve(l, tat, now, 1); d.Allowed {
			tat = d.TAT
			admitted = append(admitted, now)
		}
	}
	j := 0
	for i := range admitted {
		for admitted[i]-admitted[j] >= l.Period {
			j++
		}
		if n := int64(i - j + 1); n > l.Rate+l.Burst {
			t.Fatalf("%d admitted in one period ending at %d", n, admitted[i])
		}
	}
	if len(admitted) < 49*60 {
		t.Fatalf("only %d admitted in an hour at 50/min", len(admitted))
	}
}

// TestWholeBurstAtAnyInstant: with nothing taken, the whole burst is
// granted at every instant, though period/rate is no integer and now is
// large (a float sum rounded a hair above now denied it: the file
// backend refused 49 tokens of a central path of 49 per hour that
// Redis granted, TestDifferentialClock seed 1796600871492071702); one
// cell more never.
func TestWholeBurstAtAnyInstant(t *testing.T) {
	for _, rate := range []int64{3, 7, 49, 97} {
		l := Limit{Rate: rate, Period: 3600e9}
		for now := int64(3600e9); now < 3600e9+200; now++ {
			if d := Reserve(l, 0, now, rate); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("rate %d/h at %d: the whole burst: %+v, want allowed with 0 left", rate, now, d)
			}
			d := Reserve(l, 0, now, rate-1)
			if d2 := Reserve(l, d.TAT, now, 2); !d.Allowed || d2.Allowed {
				t.Fatalf("rate %d/h at %d: all but one, then two: %+v, %+v; want the second denied", rate, now, d, d2)
			}
		}
	}
}
