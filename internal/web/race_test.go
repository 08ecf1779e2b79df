//go:build race

package web_test

// raceSlowdown relaxes the throughput floor under the race detector,
// which slows this code by 5-10x; the correctness checks stay.
const raceSlowdown = 10
