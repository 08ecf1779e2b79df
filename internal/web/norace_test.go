//go:build !race

package web_test

// raceSlowdown is 1 without the race detector: the full throughput floor applies.
const raceSlowdown = 1
