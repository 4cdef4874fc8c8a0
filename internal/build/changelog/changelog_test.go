package changelog

import (
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

const good = `# Changelog

Intro.

- a list in the introduction

## [Unreleased]

### Added

- one thing
- another

### Security

- a fix

## [0.2.0] - 2026-03-01

### Changed

- something

## [0.1.0] - 2026-01-01

Never released as files.

[Unreleased]: https://example.com/compare/v0.2.0...HEAD
[0.2.0]: https://example.com/compare/v0.1.0...v0.2.0
`

func TestParse(t *testing.T) {
	c, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Sections {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "Unreleased,0.2.0,0.1.0" {
		t.Fatalf("sections %s", got)
	}
	if e := c.Sections[0].Entries; e["Added"] != 2 || e["Security"] != 1 {
		t.Errorf("Unreleased's entries %v", e)
	}
	if s, ok := c.Release(semver.MustParse("0.2.0")); !ok || s.Date.Format("2006-01-02") != "2026-03-01" || s.Entries["Changed"] != 1 {
		t.Errorf("0.2.0: %+v %v", s, ok)
	}
	if _, ok := c.Release(semver.MustParse("0.3.0")); ok {
		t.Error("0.3.0 found")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a release without a date", "## [Unreleased]\n## [0.2.0]\n", `"## [0.2.0]": a section is`},
		{"a version that is not one", "## [Unreleased]\n## [two] - 2026-01-01\n", `"two" is not a version`},
		{"a date that is not one", "## [Unreleased]\n## [0.2.0] - 2026-13-01\n", `"2026-13-01" is not a date`},
		{"an unknown kind of change", "## [Unreleased]\n### Improved\n", `"Improved" is not a kind of change`},
		{"a kind of change outside a section", "### Added\n", "outside a section"},
		{"an entry outside a kind of change", "## [Unreleased]\n- a loose entry\n", "an entry outside a kind of change"},
		{"a deeper heading", "## [Unreleased]\n### Added\n#### Details\n", "only ## sections"},
		{"a lower-case unreleased", "## [unreleased]\n", "a section is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, text, version, want string
	}{
		{"on the way to the next release", good, "0.3.0", ""},
		{"a release candidate of the next", good, "0.3.0-rc.1", ""},
		{"no release yet", "## [Unreleased]\n### Added\n- x\n", "0.1.0", ""},
		{"the release itself, nothing since", strings.Replace(good, "### Added\n\n- one thing\n- another\n\n### Security\n\n- a fix\n", "", 1), "0.2.0", ""},
		{"no Unreleased section", "# Changelog\n\n## [0.2.0] - 2026-03-01\n", "0.3.0", "the first section must be ## [Unreleased]"},
		{"an empty changelog", "# Changelog\n", "0.3.0", "the first section must be ## [Unreleased]"},
		{"Unreleased after a release", "## [0.2.0] - 2026-03-01\n## [Unreleased]\n", "0.3.0", "the first section must be ## [Unreleased]"},
		{"two Unreleased sections", "## [Unreleased]\n## [0.2.0] - 2026-03-01\n## [Unreleased]\n", "0.3.0", "a second ## [Unreleased]"},
		{"releases oldest first", "## [Unreleased]\n## [0.1.0] - 2026-01-01\n## [0.2.0] - 2026-03-01\n", "0.3.0", "0.2.0 is listed after 0.1.0"},
		{"an older release dated later", "## [Unreleased]\n## [0.2.0] - 2026-01-01\n## [0.1.0] - 2026-03-01\n", "0.3.0", "0.1.0 (2026-03-01) is dated after 0.2.0"},
		{"a version older than a release", good, "0.1.5", "VERSION 0.1.5 is older than the newest release, 0.2.0"},
		{"a released version with changes since", good, "0.2.0", "VERSION 0.2.0 is released (line 18) and ## [Unreleased] holds changes since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check(semver.MustParse(tc.version))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
