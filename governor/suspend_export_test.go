package governor

import "time"

// SetSleepClock makes watchSuspend read f instead of proc.SleepClock,
// until restore is called.
func SetSleepClock(f func() time.Duration) (restore func()) {
	saved := sleepClock.Swap(&f)
	return func() { sleepClock.Store(saved) }
}

// SetWallOffset shifts the wall clock the acquires read by f (a fake
// suspend moves it on with the sleep clock), until restore is called.
func SetWallOffset(f func() time.Duration) (restore func()) {
	saved := wallOffset.Swap(&f)
	return func() { wallOffset.Store(saved) }
}
