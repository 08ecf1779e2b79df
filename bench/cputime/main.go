// Command cputime runs a command several times and prints the median wall
// time and the median CPU time (user + system, from the kernel's
// accounting of the child) of one run, in milliseconds. On a machine that
// other work keeps busy the wall time of a short process grows with the
// wait for a CPU; its CPU time grows much less, so bench/run.sh reports
// both.
//
//	go run ./bench/cputime -n 50 -- gpumem --version
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

func main() {
	n := flag.Int("n", 50, "runs")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: cputime [-n runs] -- command [args...]")
		os.Exit(2)
	}
	walls, cpus := make([]time.Duration, 0, *n), make([]time.Duration, 0, *n)
	for range *n {
		cmd := exec.Command(args[0], args[1:]...)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "cputime: %v\n", err)
			os.Exit(1)
		}
		walls = append(walls, time.Since(start))
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("%.2f %.2f\n", ms(walls[len(walls)/2]), ms(cpus[len(cpus)/2]))
}
