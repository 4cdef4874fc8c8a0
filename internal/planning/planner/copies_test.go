package planner

import "testing"

// A copy's name is never another Workload's object's: Workload names and claim names are DNS
// labels, so a name with a dot is always a copy of the Workload before it.
func TestSeveralClustersCopyNamesNeverCollide(t *testing.T) {
	for _, tc := range []struct {
		base, name string
		slot       int
		ok         bool
	}{
		{"web", "web", 0, true},
		{"web", "web.1", 1, true},
		{"web", "web.12", 12, true},
		{"web", "web-eu-1", 0, false}, // Workload web-eu-1, never web's copy on eu-1
		{"web", "web-1", 0, false},
		{"web", "web.01", 0, false},
		{"web", "web.0", 0, false},
		{"web", "web.", 0, false},
		{"web", "web.1.2", 0, false},
		{"web", "web.-1", 0, false},
		{"web", "web.+1", 0, false},
		{"web", "we", 0, false},
		{"web-eu", "web.1", 0, false},
	} {
		slot, ok := CopySlot(tc.base, tc.name)
		if slot != tc.slot || ok != tc.ok {
			t.Errorf("CopySlot(%q, %q) = %d, %v; want %d, %v", tc.base, tc.name, slot, ok, tc.slot, tc.ok)
		}
		if tc.ok && CopyName(tc.base, tc.slot) != tc.name {
			t.Errorf("CopyName(%q, %d) = %q, want %q", tc.base, tc.slot, CopyName(tc.base, tc.slot), tc.name)
		}
	}
	// Workload "web" on its second cluster and Workload "web-eu-1": distinct plans and
	// claims.
	if CopyName("web", 1) == CopyName("web-eu-1", 0) || CopyName(ClaimName("web", "db", "postgres"), 1) == ClaimName("web-1", "db", "postgres") {
		t.Fatal("a copy's name is another Workload's")
	}
}
