package governor

// InForceSource says where the limit in force on a resource comes from
// (LimitInForce).
type InForceSource string

// Sources of the limit in force, strongest first.
const (
	InForceLive     InForceSource = "live"     // set live (Governor.SetLimit) until cleared
	InForceAdaptive InForceSource = "adaptive" // the adaptive limit of a provider asked for its maximum
	InForceStored   InForceSource = "stored"   // another process's, kept while the resource is in use
	InForceAsked    InForceSource = "asked"    // the limit asked for
)

// LimitInForce is the limit a process asking for limit asked is served
// under, by the backend's rule (lib-slow.lua's in_force, the file backend's
// twin), read from st: a live limit wins; else the adaptive limit of a
// resource adaptive under the maximum asked; else the stored limit while
// the resource is in use (a holder or a waiter: it changes only when
// idle); else asked. For the tool's notes and views; it changes nothing.
func LimitInForce(st Status, asked int) (int, InForceSource) {
	switch {
	case st.LiveLimit != nil:
		return st.Limit, InForceLive
	case st.Adaptive != nil && st.Adaptive.Limit > 0 && st.Adaptive.Max == asked:
		return st.Adaptive.Limit, InForceAdaptive
	case st.Limit != 0 && st.Limit != asked && (st.Used > 0 || st.QueueLen() > 0):
		return st.Limit, InForceStored
	}
	return asked, InForceAsked
}
