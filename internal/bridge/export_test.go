package bridge

// OwnerTicks counts the ticks of Serve's loop, in every bridge of the
// test binary (the tests run one at a time).
var OwnerTicks = &ownerTicks
