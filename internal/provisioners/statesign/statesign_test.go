package statesign

import "testing"

func TestSignatureIsBoundToKeyPlaceAndState(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	sig := Sign(key, "team-a", "score-state-1", []byte(`{"password":"p"}`))
	cases := []struct {
		desc            string
		key             []byte
		namespace, name string
		state           string
		want            bool
	}{
		{"the same", key, "team-a", "score-state-1", `{"password":"p"}`, true},
		{"another key", []byte("fedcba9876543210fedcba9876543210"), "team-a", "score-state-1", `{"password":"p"}`, false},
		{"another namespace", key, "team-b", "score-state-1", `{"password":"p"}`, false},
		{"another name", key, "team-a", "score-state-2", `{"password":"p"}`, false},
		{"another state", key, "team-a", "score-state-1", `{"password":"q"}`, false},
		// The parts are separated: moving a byte from the namespace to the name changes it.
		{"a boundary moved", key, "team-ascore-state-", "1", `{"password":"p"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := Verify(tc.key, tc.namespace, tc.name, []byte(tc.state), sig); got != tc.want {
				t.Fatalf("verified %t, want %t", got, tc.want)
			}
		})
	}
}
