package filebackend

// ExpiresOnMachineClock reports true: expiries run on this machine's
// clock that stops in a suspend (machineClock), as its holders' Go
// clocks do, so a Governor needs no suspend watch on this backend.
func (b *Backend) ExpiresOnMachineClock() bool { return true }
