// Package limits holds the one rule rukpak's bounds share for unset
// values: a limit of zero or below stands for its default. Each Limits or
// Options type keeps its own defaults and a withDefaults method built from
// PositiveOr, so that the rule is written once.
package limits
