// Package changelog reads CHANGELOG.md, kept in the Keep a Changelog form
// (https://keepachangelog.com/en/1.1.0/), and checks it against the version the tree reports
// (the file VERSION): an Unreleased section every change adds to, then one section per release,
// newest first, each under its version and date, holding only the form's kinds of change.
package changelog

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/blang/semver/v4"
)

// Unreleased is the heading of the changes not yet in a release.
const Unreleased = "Unreleased"

// Kinds are the headings a section's changes are grouped under, in the form's order.
var Kinds = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}

// Section is one "## [...]" section.
type Section struct {
	// Name is "Unreleased" or a version.
	Name string
	// Version is Name parsed, for a release.
	Version semver.Version
	// Date is a release's date.
	Date time.Time
	// Line is the heading's line number (from 1).
	Line int
	// Entries counts the section's list items ("- ..."), by kind.
	Entries map[string]int
}

// Changelog is CHANGELOG.md, its sections in the file's order.
type Changelog struct {
	Sections []Section
}

var (
	releaseHeading = regexp.MustCompile(`^## \[([^\]]+)\] - (\d{4}-\d{2}-\d{2})$`)
	linkDefinition = regexp.MustCompile(`^\[[^\]]+\]: \S+$`)
)

// Parse reads a changelog's text, refusing what the form does not allow: an unknown heading, a
// kind of change outside a section or not among Kinds, a release without a version or date.
func Parse(text string) (Changelog, error) {
	var c Changelog
	kind := ""
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		switch {
		case strings.HasPrefix(line, "## "):
			s, err := heading(line, n)
			if err != nil {
				return Changelog{}, err
			}
			c.Sections = append(c.Sections, s)
			kind = ""
		case strings.HasPrefix(line, "### "):
			name := strings.TrimPrefix(line, "### ")
			if len(c.Sections) == 0 {
				return Changelog{}, fmt.Errorf("line %d: %q is outside a section", n, line)
			}
			if !known(name) {
				return Changelog{}, fmt.Errorf("line %d: %q is not a kind of change (%s)", n, name, strings.Join(Kinds, ", "))
			}
			kind = name
		case strings.HasPrefix(line, "- "):
			if kind == "" {
				if len(c.Sections) == 0 {
					continue // the introduction's lists
				}
				return Changelog{}, fmt.Errorf("line %d: an entry outside a kind of change (### %s)", n, strings.Join(Kinds, ", ### "))
			}
			c.Sections[len(c.Sections)-1].Entries[kind]++
		case strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "# "):
			return Changelog{}, fmt.Errorf("line %d: %q: only ## sections and ### kinds of change", n, line)
		case linkDefinition.MatchString(line):
			kind = "" // the links that end the file
		}
	}
	return c, nil
}

func heading(line string, n int) (Section, error) {
	s := Section{Line: n, Entries: map[string]int{}}
	if line == "## ["+Unreleased+"]" {
		s.Name = Unreleased
		return s, nil
	}
	m := releaseHeading.FindStringSubmatch(line)
	if m == nil {
		return Section{}, fmt.Errorf("line %d: %q: a section is \"## [%s]\" or \"## [MAJOR.MINOR.PATCH] - YYYY-MM-DD\"", n, line, Unreleased)
	}
	v, err := semver.Parse(m[1])
	if err != nil {
		return Section{}, fmt.Errorf("line %d: %q is not a version: %w", n, m[1], err)
	}
	date, err := time.Parse(time.DateOnly, m[2])
	if err != nil {
		return Section{}, fmt.Errorf("line %d: %q is not a date: %w", n, m[2], err)
	}
	s.Name, s.Version, s.Date = m[1], v, date
	return s, nil
}

func known(kind string) bool {
	for _, k := range Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Release is the section of version v, if the changelog has one.
func (c Changelog) Release(v semver.Version) (Section, bool) {
	for _, s := range c.Sections {
		if s.Name != Unreleased && s.Version.Equals(v) {
			return s, true
		}
	}
	return Section{}, false
}

// Check is what a tree at version (the file VERSION) needs of its changelog: the Unreleased
// section first; the releases after it, newest first, each dated no earlier than the one
// before it; and a version that has not been released already while Unreleased holds changes
// (the first change after a release moves VERSION on, so that no build claims a release it is
// not).
func (c Changelog) Check(version semver.Version) error {
	if len(c.Sections) == 0 || c.Sections[0].Name != Unreleased {
		return fmt.Errorf("the first section must be ## [%s], which every change adds to", Unreleased)
	}
	var newest *Section
	for i := 1; i < len(c.Sections); i++ {
		s := c.Sections[i]
		if s.Name == Unreleased {
			return fmt.Errorf("line %d: a second ## [%s]", s.Line, Unreleased)
		}
		if i > 1 {
			prev := c.Sections[i-1]
			if !s.Version.LT(prev.Version) {
				return fmt.Errorf("line %d: %s is listed after %s: releases go newest first", s.Line, s.Name, prev.Name)
			}
			if s.Date.After(prev.Date) {
				return fmt.Errorf("line %d: %s (%s) is dated after %s (%s)", s.Line, s.Name, s.Date.Format(time.DateOnly), prev.Name, prev.Date.Format(time.DateOnly))
			}
		} else {
			newest = &c.Sections[i]
		}
	}
	if newest == nil {
		return nil
	}
	if version.LT(newest.Version) {
		return fmt.Errorf("VERSION %s is older than the newest release, %s", version, newest.Name)
	}
	if version.Equals(newest.Version) && total(c.Sections[0].Entries) > 0 {
		return fmt.Errorf("VERSION %s is released (line %d) and ## [%s] holds changes since: set VERSION to the next version", version, newest.Line, Unreleased)
	}
	return nil
}

func total(entries map[string]int) int {
	n := 0
	for _, c := range entries {
		n += c
	}
	return n
}
