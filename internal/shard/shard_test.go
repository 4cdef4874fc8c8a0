package shard

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestSelector(t *testing.T) {
	for _, tc := range []struct {
		in        string
		matches   []map[string]string
		misses    []map[string]string
		wantError string
	}{
		{in: ""},
		{in: "score.dev/shard=blue", matches: []map[string]string{{scorev1b1.LabelShard: "blue"}},
			misses: []map[string]string{nil, {scorev1b1.LabelShard: "green"}}},
		{in: "!score.dev/shard", matches: []map[string]string{nil, {"team": "a"}},
			misses: []map[string]string{{scorev1b1.LabelShard: "blue"}}},
		{in: "score.dev/shard in (blue,green)", matches: []map[string]string{{scorev1b1.LabelShard: "green"}}, misses: []map[string]string{nil}},
		{in: "team=a", wantError: "selects on team; shards select on score.dev/shard only"},
		{in: "score.dev/shard=blue,team=a", wantError: "selects on team"},
		{in: "score.dev/shard in (", wantError: "--watch-label-selector"},
	} {
		sel, err := Selector(tc.in)
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.wantError)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if tc.in == "" {
			if sel != nil || LeaseSuffix(sel) != "" {
				t.Errorf("the empty selector shards nothing: %v %q", sel, LeaseSuffix(sel))
			}
			continue
		}
		for _, l := range tc.matches {
			if !sel.Matches(labels.Set(l)) {
				t.Errorf("%q does not select %v", tc.in, l)
			}
		}
		for _, l := range tc.misses {
			if sel.Matches(labels.Set(l)) {
				t.Errorf("%q selects %v", tc.in, l)
			}
		}
	}
	a, _ := Selector("score.dev/shard=blue")
	b, _ := Selector("score.dev/shard=green")
	if LeaseSuffix(a) == LeaseSuffix(b) || LeaseSuffix(a) == "" {
		t.Errorf("each shard has a lease of its own: %q %q", LeaseSuffix(a), LeaseSuffix(b))
	}
}

func TestFollow(t *testing.T) {
	blue := map[string]string{scorev1b1.LabelShard: "blue", "team": "a"}
	for _, tc := range []struct {
		name          string
		obj, workload map[string]string
		want          map[string]string
		changed       bool
	}{
		{"unsharded stays unlabelled", map[string]string{"x": "y"}, nil, map[string]string{"x": "y"}, false},
		{"labelled like its Workload", nil, blue, map[string]string{scorev1b1.LabelShard: "blue"}, true},
		{"moved to another shard", map[string]string{scorev1b1.LabelShard: "green", "x": "y"}, blue, map[string]string{scorev1b1.LabelShard: "blue", "x": "y"}, true},
		{"already there", map[string]string{scorev1b1.LabelShard: "blue"}, blue, map[string]string{scorev1b1.LabelShard: "blue"}, false},
		{"back to the unlabelled rest", map[string]string{scorev1b1.LabelShard: "blue", "x": "y"}, map[string]string{"team": "a"}, map[string]string{"x": "y"}, true},
	} {
		got, changed := Follow(tc.obj, tc.workload)
		if changed != tc.changed || labels.Set(got).String() != labels.Set(tc.want).String() {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, changed, tc.want, tc.changed)
		}
	}
}
