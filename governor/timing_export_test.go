package governor

// ResolveTiming is t.resolve for the timing tests: every zero field of
// t derived, then checked.
func ResolveTiming(t LeaseTiming, names TimingNames) (LeaseTiming, error) { return t.resolve(names) }
