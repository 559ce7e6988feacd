package governor

import "time"

// SetSleepClock makes watchSuspend read f instead of proc.SleepClock,
// until restore is called.
func SetSleepClock(f func() time.Duration) (restore func()) {
	saved := sleepClock.Swap(&f)
	return func() { sleepClock.Store(saved) }
}
