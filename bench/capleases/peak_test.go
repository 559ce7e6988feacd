package main

import (
	"path/filepath"
	"testing"
)

// The bench's overlap check: intervals written by processes, merged,
// give the most in use at once; an end and a start at one instant do
// not overlap.
func TestPeakInUse(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := writeIntervals(a, []interval{{0, 10}, {10, 20}, {30, 40}}); err != nil {
		t.Fatal(err)
	}
	if err := writeIntervals(b, []interval{{5, 12}, {11, 31}}); err != nil {
		t.Fatal(err)
	}
	peak, err := peakInUse([]string{a, b})
	if err != nil || peak != 3 { // 11–12: a's {10,20}, b's {5,12} and {11,31}
		t.Fatalf("peak = %d, %v; want 3", peak, err)
	}
	if err := writeIntervals(b, []interval{{9, 8}}); err != nil {
		t.Fatal(err)
	}
	if _, err := peakInUse([]string{b}); err == nil {
		t.Fatal("an interval ending before it starts was accepted")
	}
}

// The bench's rate check: every sliding window is counted, each
// starting at a grant.
func TestBusiestWindow(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := writeIntervals(a, []interval{{0, 1}, {50, 51}, {100, 101}}); err != nil {
		t.Fatal(err)
	}
	if err := writeIntervals(b, []interval{{60, 61}, {99, 100}, {160, 161}}); err != nil {
		t.Fatal(err)
	}
	if n, err := busiestWindow([]string{a, b}, 100); err != nil || n != 4 { // 50, 60, 99, 100 in [50, 150)
		t.Fatalf("busiest = %d, %v; want 4", n, err)
	}
}

// The tokens check: a .tokens file's uses count their tokens (an
// interval's end) in every sliding window.
func TestBusiestTokens(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a.tokens")
	if err := writeIntervals(a, []interval{{0, 10}, {50, 30}, {60, 5}, {149, 40}, {150, 100}}); err != nil {
		t.Fatal(err)
	}
	if n, err := busiestWindow([]string{a}, 100); err != nil || n != 145 { // 60, 149, 150 in [60, 160)
		t.Fatalf("busiest = %d, %v; want 145", n, err)
	}
}
