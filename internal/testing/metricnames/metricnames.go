// Package metricnames finds the metric names a PromQL expression queries, so that a dashboard
// or an alert can be checked against the metrics the controllers expose. It reads the
// expressions this project writes (selectors, aggregations, functions, ranges, Grafana
// variables) without a full PromQL parser: strings, label matchers, ranges and grouping
// clauses are taken out, and what is left that is not a function, keyword or number is a
// metric name.
package metricnames

import (
	"regexp"
	"slices"
	"strings"
)

var (
	quoted   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	matchers = regexp.MustCompile(`\{[^{}]*\}`)
	ranges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	grouping = regexp.MustCompile(`(?i)\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	ident    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
		"and", "or", "unless", "offset", "atan2", "inf", "nan"}
)

// Referenced returns the metric names expr queries, sorted, each once.
func Referenced(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range ident.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] == '$' || s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // a variable, or a number's exponent or unit
		}
		if slices.Contains(keywords, strings.ToLower(name)) || strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") {
			continue // a keyword or a function (an aggregation's function is followed by its group or its argument)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
