package governor

import "testing"

func TestLimitInForce(t *testing.T) {
	busy := []Holder{{LeaseID: "a"}}
	for _, tc := range []struct {
		name  string
		st    Status
		asked int
		want  int
		src   InForceSource
	}{
		{"never used", Status{}, 3, 3, InForceAsked},
		{"idle: the asked one is stored next", Status{Limit: 2}, 3, 3, InForceAsked},
		{"in use: the stored one", Status{Limit: 2, Used: 1, Holders: busy}, 3, 2, InForceStored},
		{"waiters count as use", Status{Limit: 2, Queued: 1}, 3, 2, InForceStored},
		{"live wins", Status{Limit: 5, LiveLimit: &LiveLimit{}, Adaptive: &AdaptiveState{Limit: 1, Max: 3}}, 3, 5, InForceLive},
		{"adaptive for its maximum", Status{Limit: 4, Adaptive: &AdaptiveState{Limit: 2, Max: 4}}, 4, 2, InForceAdaptive},
		{"adaptive under another maximum", Status{Limit: 4, Adaptive: &AdaptiveState{Limit: 2, Max: 8}}, 4, 4, InForceAsked},
	} {
		got, src := LimitInForce(tc.st, tc.asked)
		if got != tc.want || src != tc.src {
			t.Errorf("%s: LimitInForce = %d, %s; want %d, %s", tc.name, got, src, tc.want, tc.src)
		}
	}
}
